package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
)

// hermeticIdentity gives git a global config of its own in a temp dir holding cfg, and returns
// a repository directory.
func hermeticIdentity(t *testing.T, global string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "gitconfig"))
	must(t, os.WriteFile(filepath.Join(dir, "gitconfig"), []byte(global), 0o600))
	repo := filepath.Join(dir, "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	return repo
}

// TestGitIdentity: each git_identity value puts exactly its identity into the session's
// variables (author and committer), with host values marked as such; a host without an
// identity sets nothing and names what is missing; a control character in the host's value is
// refused rather than sent.
func TestGitIdentity(t *testing.T) {
	both := "[user]\n\tname = Host Person\n\temail = host@example.invalid\n"
	cases := []struct {
		mode, global string
		want         map[string]string
		host         bool
		missing      string
		err          string
	}{
		{mode: "host", global: both, host: true, want: map[string]string{"GIT_AUTHOR_NAME": "Host Person", "GIT_COMMITTER_NAME": "Host Person",
			"GIT_AUTHOR_EMAIL": "host@example.invalid", "GIT_COMMITTER_EMAIL": "host@example.invalid"}},
		{mode: "corral", global: both, want: map[string]string{"GIT_AUTHOR_NAME": CorralName, "GIT_COMMITTER_NAME": CorralName,
			"GIT_AUTHOR_EMAIL": CorralEmail, "GIT_COMMITTER_EMAIL": CorralEmail}},
		{mode: "none", global: both},
		{mode: "host", global: "[user]\n\tname = Only Name\n", host: true, missing: "user.email",
			want: map[string]string{"GIT_AUTHOR_NAME": "Only Name", "GIT_COMMITTER_NAME": "Only Name"}},
		{mode: "host", global: "", host: true, missing: "user.email,user.name", want: map[string]string{}},
		{mode: "host", global: "[user]\n\tname = Evil\x1b[31m\n\temail = e@x\n", err: "control characters"},
		{mode: "host", global: "[user]\n\tname = \"Two\\nLines\"\n\temail = e@x\n", err: "user.name \"Two\\nLines\" has control characters"},
		{mode: "host", global: "[user]\n\tname = First\n\tname = Last\n\temail = e@x\n", host: true,
			want: map[string]string{"GIT_AUTHOR_NAME": "Last", "GIT_COMMITTER_NAME": "Last", "GIT_AUTHOR_EMAIL": "e@x", "GIT_COMMITTER_EMAIL": "e@x"}},
		{mode: "loose", global: both, err: `"loose" is not host, corral or none`},
	}
	for _, c := range cases {
		t.Run(c.mode+"/"+strings.ReplaceAll(c.missing, ",", "+")+c.err+c.want["GIT_AUTHOR_NAME"], func(t *testing.T) {
			repo := hermeticIdentity(t, c.global)
			vars, host, missing, err := GitIdentity(context.Background(), c.mode, repo)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("GitIdentity = %v, %v; want an error with %q", vars, err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(vars, c.want) && len(vars)+len(c.want) > 0 || host != c.host || strings.Join(missing, ",") != c.missing {
				t.Fatalf("GitIdentity = %v host %v missing %v, %v; want %v host %v missing %q", vars, host, missing, err, c.want, c.host, c.missing)
			}
		})
	}
}

// TestGitIdentityInSessionEnv: the identity reaches the session's variables (what travels in
// the SSH channel) and a host identity counts as a host value (sent only after the guard
// check); control: with "none" nothing of it is there.
func TestGitIdentityInSessionEnv(t *testing.T) {
	repo := hermeticIdentity(t, "[user]\n\tname = Host Person\n\temail = host@example.invalid\n")
	for _, c := range []struct {
		mode, author string
		hostValues   bool
	}{{"host", "Host Person", true}, {"corral", CorralName, false}, {"none", "", false}} {
		cfg := policy.Default()
		cfg.GitIdentity = c.mode
		cfg.Env = nil
		b := &Box{Config: cfg, Dir: repo, Project: &project.Project{TopLevel: repo}}
		got, names, hostValues, err := envWith(b, nil)
		if err != nil || got["GIT_AUTHOR_NAME"] != c.author || hostValues != c.hostValues {
			t.Errorf("%s: env %v hostValues %v, %v; want author %q hostValues %v", c.mode, got, hostValues, err, c.author, c.hostValues)
		}
		if c.author != "" && !strings.Contains(strings.Join(names, ","), "GIT_COMMITTER_EMAIL") {
			t.Errorf("%s: audited names %v lack the identity variables", c.mode, names)
		}
	}
}

// TestGitIdentityReadOnce: the session's environment takes the identity Open read (one git
// process per command, not one per use): after the host's configuration changed, the box's
// read still gives what was read; for another mode or directory it reads again (the control).
func TestGitIdentityReadOnce(t *testing.T) {
	repo := hermeticIdentity(t, "[user]\n\tname = Read Once\n\temail = once@example.invalid\n")
	cfg := policy.Default()
	cfg.GitIdentity = "host"
	b := &Box{Config: cfg, Dir: repo, Project: &project.Project{TopLevel: repo}, identity: readIdentity(context.Background(), "host", repo)}
	if _, _, _, err := b.identity.result(); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(os.Getenv("GIT_CONFIG_GLOBAL"), []byte("[user]\n\tname = Changed\n"), 0o600))
	if vars, _, _, err := b.gitIdentity(context.Background()); err != nil || vars["GIT_AUTHOR_NAME"] != "Read Once" {
		t.Errorf("session identity %v, %v; want the one Open read", vars, err)
	}
	b.identity = readIdentity(context.Background(), "corral", repo)
	if vars, _, _, err := b.gitIdentity(context.Background()); err != nil || vars["GIT_AUTHOR_NAME"] != "Changed" {
		t.Errorf("a read for another mode: %v, %v; want the host's git asked again", vars, err)
	}
}

// TestGitIdentityCloneModeReadsGlobalOnly: without a checkout (clone mode) only the user's
// global configuration is read, never a repository's own (control: in the checkout, the
// repository's user.name wins as git says).
func TestGitIdentityCloneModeReadsGlobalOnly(t *testing.T) {
	repo := hermeticIdentity(t, "[user]\n\tname = Global Person\n\temail = g@example.invalid\n")
	if out, err := exec.Command("git", "-C", repo, "config", "user.name", "Repo Person").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v: %s", err, out)
	}
	t.Chdir(repo)
	for dir, want := range map[string]string{"": "Global Person", repo: "Repo Person"} {
		vars, _, _, err := GitIdentity(context.Background(), "host", dir)
		if err != nil || vars["GIT_AUTHOR_NAME"] != want {
			t.Errorf("dir %q: %v, %v; want author %q", dir, vars, err, want)
		}
	}
}
