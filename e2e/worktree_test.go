package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorktreeBox is the linked worktree group (issue #20) on one full-network box: a linked
// worktree is its own box, which mounts the worktree and the main repository's git dir (nothing
// of the main work tree); git in it commits, and the commit is the worktree branch's new commit
// on the host; the box cannot plant a hook or core.fsmonitor in the common dir that the host's
// git then runs, in the main checkout or in the worktree.
func TestWorktreeBox(t *testing.T) {
	group(t)
	base := cloneCase(t, "worktree")
	main, wt := filepath.Join(base, "main"), filepath.Join(base, "wt-x")
	sh(t, fmt.Sprintf(`set -e; mkdir %[1]s; cd %[1]s; git init -q -b main .; echo hello >README; git add README
git commit -qm base; git worktree add -q ../wt-x -b x`, main))
	box := boxName(t, wt)
	cleanupBox(t, box)
	if mainBox := boxName(t, main); mainBox == box {
		t.Fatalf("the worktree and the main checkout share box %s", box)
	}
	before := strings.TrimSpace(gitAsUser(t, main, "rev-parse", "x").stdout)

	t.Run("run in the worktree commits with the shadow holding", func(t *testing.T) {
		r := corral(t, wt, nil, "run", "--yes", "--", "sh", "-c",
			`git status && git -c user.name=box -c user.email=box@box.invalid commit --allow-empty -qm in-box && echo ok`)
		if r.code != 0 || !strings.Contains(r.stdout, "ok") {
			t.Fatalf("run in the worktree: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		// The shadow holds on the common dir: its config is a read-only copy in the box.
		r = corral(t, wt, nil, "run", "--", "sh", "-c", `git config core.fsmonitor x 2>/dev/null && echo WROTE || echo refused`)
		if r.code != 0 || !strings.Contains(r.stdout, "refused") {
			t.Errorf("git config in the worktree's box: exit %d, stdout %q: the common dir's config is writable", r.code, r.stdout)
		}
	})
	t.Run("the box's commit is the branch's new commit on the host", func(t *testing.T) {
		after := strings.TrimSpace(gitAsUser(t, main, "rev-parse", "x").stdout)
		subject := strings.TrimSpace(gitAsUser(t, main, "log", "-1", "--format=%s", "x").stdout)
		if after == before || subject != "in-box" {
			t.Errorf("branch x on the host: %s -> %s, subject %q; want the box's commit in-box", before, after, subject)
		}
		if st := gitAsUser(t, wt, "status", "--porcelain"); st.code != 0 {
			t.Errorf("host git status in the worktree after the box's commit: exit %d: %s", st.code, st.stderr)
		}
	})
	t.Run("hooks and config the box plants in the common dir never reach the host", func(t *testing.T) {
		canary := filepath.Join(base, "PWNED")
		common := filepath.Join(main, ".git")
		script := fmt.Sprintf(`git config core.fsmonitor "touch %[1]s" 2>/dev/null && echo config-written
git config --worktree core.fsmonitor "touch %[1]s" 2>/dev/null && echo worktree-config-written
printf '#!/bin/sh\ntouch %[1]s\n' > %[2]s/hooks/pre-commit 2>/dev/null && chmod +x %[2]s/hooks/pre-commit && echo hook-written
printf '[core]\n\thooksPath = /tmp\n' >> %[2]s/config 2>/dev/null && echo appended
ls %[2]s/objects >/dev/null && echo common-dir-mounted`, canary, common)
		r := corral(t, wt, nil, "run", "--", "sh", "-c", script)
		if r.code != 0 || !strings.Contains(r.stdout, "common-dir-mounted") {
			// Without the common dir in the box nothing was planted, and every check below
			// would pass vacuously.
			t.Fatalf("run: exit %d, stdout %q: the box did not run the planting script on the common dir", r.code, r.stdout)
		}
		for _, w := range []string{"config-written", "worktree-config-written", "hook-written", "appended"} {
			if strings.Contains(r.stdout, w) {
				t.Errorf("in the box: %s (the shadow did not block it)", w)
			}
		}
		if _, err := os.Stat(filepath.Join(common, "hooks", "pre-commit")); err == nil {
			t.Error("the pre-commit hook reached the host's common dir")
		}
		for _, d := range []string{main, wt} {
			if v := gitAsUser(t, d, "config", "core.fsmonitor"); strings.TrimSpace(v.stdout) != "" {
				t.Errorf("core.fsmonitor on the host in %s = %q", d, v.stdout)
			}
			writeFile(t, filepath.Join(d, "new.txt"), "x\n", 0o644)
			gitAsUser(t, d, "status")
			gitAsUser(t, d, "add", "new.txt")
			if c := gitAsUser(t, d, "commit", "-qm", "host commit"); c.code != 0 {
				t.Errorf("host commit in %s: exit %d: %s", d, c.code, c.stderr)
			}
		}
		if _, err := os.Stat(canary); err == nil {
			t.Fatal("the host's git ran something the box planted in the common dir")
		}
	})
	t.Run("control: a hook in the common dir does run on the host", func(t *testing.T) {
		// The same hook written on the host fires, so the canary above could have caught one.
		canary := filepath.Join(base, "CONTROL")
		hook := filepath.Join(main, ".git", "hooks", "pre-commit")
		writeFile(t, hook, fmt.Sprintf("#!/bin/sh\ntouch %s\n", canary), 0o755)
		defer os.Remove(hook)
		gitAsUser(t, wt, "commit", "--allow-empty", "-qm", "control")
		if _, err := os.Stat(canary); err != nil {
			t.Fatalf("the host's hook did not run in the worktree, so the canary proves nothing: %v", err)
		}
	})
}
