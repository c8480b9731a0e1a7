package diff

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/project"
)

// testRepo is a real git repository built by script, with a hermetic environment and a canary:
// filter, textconv, external diff, fsmonitor and hook settings that would each create a file in
// canaryDir if git (or anything else) ever ran them.
type testRepo struct {
	t      *testing.T
	dir    string
	home   string
	canary string
	env    []string
}

// newRepo creates a repository with files committed by a fixed author at a fixed date, then
// arms the canary (after the commit, so that committing does not fire it).
func newRepo(t *testing.T, files map[string]string) *testRepo {
	t.Helper()
	root := t.TempDir()
	r := &testRepo{t: t, dir: filepath.Join(root, "work"), home: filepath.Join(root, "corral"), canary: filepath.Join(root, "canary")}
	for _, d := range []string{r.dir, r.canary, filepath.Join(root, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.env = []string{"HOME=" + filepath.Join(root, "home"), "CORRAL_HOME=" + r.home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(root, "home", "gitconfig"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
		"GIT_ALLOW_PROTOCOL=file"}
	r.git("init", "-q", "-b", "main")
	for name, body := range files {
		r.write(name, body)
	}
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", "init")
	r.armCanary()
	return r
}

// armCanary configures every repository-defined driver to touch a file in the canary dir.
func (r *testRepo) armCanary() {
	touch := func(name string) string { return "touch " + filepath.Join(r.canary, name) }
	for k, v := range map[string]string{
		"filter.canary.clean":  touch("clean") + "; cat",
		"filter.canary.smudge": touch("smudge") + "; cat",
		"diff.canary.textconv": touch("textconv") + "; cat",
		"diff.canary.command":  touch("diffcmd"),
		"diff.external":        touch("external"),
		"core.fsmonitor":       r.script("fsmonitor", touch("fsmonitor")+"\nexit 1"),
		"core.pager":           touch("pager") + "; cat",
		"merge.canary.driver":  touch("merge"),
	} {
		r.git("config", k, v)
	}
	for _, hook := range []string{"post-checkout", "pre-commit", "post-index-change", "reference-transaction"} {
		p := filepath.Join(r.dir, ".git", "hooks", hook)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+touch("hook-"+hook)+"\n"), 0o755); err != nil {
			r.t.Fatal(err)
		}
	}
	attrs := filepath.Join(r.dir, ".git", "info", "attributes")
	if err := os.WriteFile(attrs, []byte("* filter=canary diff=canary merge=canary\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// script writes an executable shell script beside the canary dir and returns its path.
func (r *testRepo) script(name, body string) string {
	p := filepath.Join(filepath.Dir(r.canary), name+".sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// clearCanary removes canary files left by the test's own git commands.
func (r *testRepo) clearCanary() {
	for _, n := range r.canaryFired() {
		_ = os.Remove(filepath.Join(r.canary, n))
	}
}

// checkCanary fails the test when a canary file exists after the call named what.
func (r *testRepo) checkCanary(what string) {
	r.t.Helper()
	if fired := r.canaryFired(); len(fired) > 0 {
		r.t.Errorf("%s ran a repository-defined driver: canary files %v", what, fired)
	}
}

// canaryFired lists the canary files that exist.
func (r *testRepo) canaryFired() []string {
	names, _ := readNames(r.canary)
	return names
}

// git runs git for the test's own setup with hooks and fsmonitor switched off, so that only
// the code under test could fire the canary.
func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	return r.rawGit(append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)...)
}

// rawGit runs git as a user would, with the repository's configuration in force.
func (r *testRepo) rawGit(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), r.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *testRepo) abs(name string) string { return filepath.Join(r.dir, filepath.FromSlash(name)) }

func (r *testRepo) write(name, body string) {
	r.t.Helper()
	p := r.abs(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) project() *project.Project {
	r.t.Helper()
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		r.t.Setenv(k, v)
	}
	p, err := project.Find(r.t.Context(), r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// record records a session base and returns its ref.
func (r *testRepo) record() string {
	r.t.Helper()
	ref, err := RecordBaseWith(r.t.Context(), r.project(), "box-test", BaseOptions{Home: r.home})
	if err != nil {
		r.t.Fatalf("RecordBase: %v", err)
	}
	return ref
}

// compare runs Compare against the latest session base (or rev).
func (r *testRepo) compare(o Options) *Report {
	r.t.Helper()
	o.Box, o.Home = "box-test", r.home
	rep, err := Compare(r.t.Context(), r.project(), o)
	if err != nil {
		r.t.Fatalf("Compare: %v", err)
	}
	return rep
}
