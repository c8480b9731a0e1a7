package e2e

import (
	"encoding/json"
	"fmt"

	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plantScript runs in the box: it adds a submodule from a repository made inside the guest,
// plants a hook and core.fsmonitor in the submodule's new git dir, adds a linked worktree and
// gives it a config.worktree, makes a git dir by hand under .git/modules/, and puts a nested
// repository and a bare one in the work tree, each with a hook and core.fsmonitor that would
// touch the canary on the host. Any step may fail in the box (the top level's config is a
// read-only copy, and the host may neutralise a git dir while git is still writing it); the
// test judges only what the host is left with.
const plantScript = `export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t.invalid
hook() { mkdir -p "$1" && printf '#!/bin/sh\ntouch %[1]s\n' > "$1/$2" && chmod +x "$1/$2"; }
fsmon() { printf '[core]\n\tfsmonitor = "touch %[1]s"\n' >> "$1"; }
rm -rf /tmp/lib && git init -q /tmp/lib && git -C /tmp/lib commit -q --allow-empty -m lib
git -c protocol.file.allow=always submodule add -q /tmp/lib sub; echo "submodule add: $?"
hook .git/modules/sub/hooks post-checkout; hook .git/modules/sub/hooks pre-commit; fsmon .git/modules/sub/config
git worktree add -q wt-planted; echo "worktree add: $?"; fsmon .git/worktrees/wt-planted/config.worktree
git init -q --bare .git/modules/planted; hook .git/modules/planted/hooks pre-commit; fsmon .git/modules/planted/config
git init -q nested; hook nested/.git/hooks pre-commit; fsmon nested/.git/config
git init -q --bare evil.git; hook evil.git/hooks pre-commit; fsmon evil.git/config
ls -la .git/modules .git/modules/* .git/worktrees/* nested/.git evil.git
true`

// plantedRepos is the scenario: after a session in which the box adds git dirs, the host's git
// runs nothing the box planted in them, the host reported and audited what it neutralised, and
// git corral diff flags the nested repository and the bare one (which the host leaves alone).
func plantedRepos(t *testing.T, dir string) {
	canary := filepath.Join(dir, "PWNED-planted")
	r := corral(t, dir, nil, "run", "--", "sh", "-c", fmt.Sprintf(plantScript, canary))
	if r.code != 0 {
		t.Fatalf("run: exit %d", r.code)
	}
	for _, want := range []string{".git/modules/sub", ".git/modules/planted", ".git/worktrees/wt-planted/config.worktree", "nested/.git"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the session did not report what it neutralised in %s", want)
		}
	}
	noPlantedHooksOrConfig(t, dir)
	hostGitRunsNothing(t, dir, canary)
	if _, err := os.Lstat(filepath.Join(dir, ".git", "worktrees", "wt-planted", "config.worktree")); err == nil {
		t.Error("the config.worktree the box gave its new worktree is still on the host")
	}
	audited(t, ".git/modules/sub", ".git/modules/planted", ".git/worktrees/wt-planted/config.worktree", "nested/.git")
	d := corral(t, dir, nil, "diff", "--json")
	var rep struct {
		Findings []struct{ Path, Reason string }
	}
	if err := json.Unmarshal([]byte(d.stdout), &rep); err != nil {
		t.Fatalf("diff --json: %v", err)
	}
	flagged := map[string]string{"nested/.git": "a nested git dir", "evil.git": "a bare repository"}
	if _, err := os.Lstat(filepath.Join(dir, "sub", ".git")); err == nil {
		flagged["sub/.git"] = "a .git file" // the submodule's work tree, when git submodule add got that far
	}
	if _, err := os.Lstat(filepath.Join(dir, "wt-planted", ".git")); err == nil {
		flagged["wt-planted/.git"] = "a .git file"
	}
	for path, reason := range flagged {
		found := false
		for _, f := range rep.Findings {
			found = found || (f.Path == path && strings.Contains(f.Reason, reason))
		}
		if !found {
			t.Errorf("git corral diff does not flag %s as %q", path, reason)
		}
	}
	if c := corral(t, dir, nil, "diff", "--exit-code"); c.code != 1 {
		t.Errorf("diff --exit-code: exit %d, want 1", c.code)
	}
}

// noPlantedHooksOrConfig checks every git dir the box added: no hook but *.sample, and no config
// key that executes.
func noPlantedHooksOrConfig(t *testing.T, dir string) {
	t.Helper()
	for _, g := range []string{".git/modules/sub", ".git/modules/planted", "nested/.git"} {
		hooks, _ := os.ReadDir(filepath.Join(dir, g, "hooks"))
		for _, h := range hooks {
			if !strings.HasSuffix(h.Name(), ".sample") {
				t.Errorf("%s/hooks/%s is still on the host", g, h.Name())
			}
		}
		cfg, _ := os.ReadFile(filepath.Join(dir, g, "config"))
		if strings.Contains(strings.ToLower(string(cfg)), "fsmonitor") {
			t.Errorf("%s/config still sets core.fsmonitor:\n%s", g, cfg)
		}
	}
}

// hostGitRunsNothing runs the host's git where the planted hooks and config would fire.
func hostGitRunsNothing(t *testing.T, dir, canary string) {
	t.Helper()
	gitAsUser(t, dir, "status")
	gitAsUser(t, dir, "submodule", "status")
	for _, sub := range []string{"sub", "nested", "wt-planted"} {
		if _, err := os.Stat(filepath.Join(dir, sub, ".git")); err != nil {
			continue
		}
		gitAsUser(t, filepath.Join(dir, sub), "status")
		gitAsUser(t, filepath.Join(dir, sub), "commit", "-q", "--allow-empty", "-m", "host")
	}
	gitAsUser(t, dir, "commit", "-q", "--allow-empty", "-m", "host after planting")
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("the host's git ran something the box planted in a git dir it added")
	}
}

// audited checks that the audit log records a shadow-restore event naming each path.
func audited(t *testing.T, paths ...string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(suite.home, "logs", "sessions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var restores []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"shadow-restore"`) {
			restores = append(restores, line)
		}
	}
	for _, p := range paths {
		if !strings.Contains(strings.Join(restores, "\n"), p) {
			t.Errorf("no shadow-restore record in the audit log names %s", p)
		}
	}
}
