package gitshadow

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The tests in this file are a linked worktree's own box (issue #20): the plan is made from the
// worktree, whose box mounts the worktree and the main repository's git dir (the common dir),
// and the common dir is shadowed as a normal repository's .git is.

// TestDiscoverWorktreeBoxShadows: the plan of a linked worktree shadows the common dir like a
// top-level .git (config copied, hooks empty, info and commondir read-only, pinned) and the
// worktree's own admin dir, its gitdir file included; the main checkout's plan (the control)
// does not name the worktree's gitdir as a top level's.
func TestDiscoverWorktreeBoxShadows(t *testing.T) {
	root := fixture(t)
	plan := discover(t, filepath.Join(root, "wt"))
	common := filepath.Join(root, "work/.git")
	admin := filepath.Join(common, "worktrees/wt")
	kinds := map[string]Kind{}
	for _, s := range plan.AllShadows() {
		kinds[s.Path] = s.Kind
	}
	for p, k := range map[string]Kind{
		common: Pin, common + "/config": Copy, common + "/hooks": Empty, common + "/info": ReadOnly,
		admin: Pin, admin + "/gitdir": ReadOnly, admin + "/commondir": ReadOnly, admin + "/config.worktree": Copy,
		filepath.Join(root, "wt/.git"): ReadOnly,
	} {
		if kinds[p] != k {
			t.Errorf("worktree box: shadow of %s is %q, want %q", p, kinds[p], k)
		}
	}
	if plan.GitDirs[0].Path != admin || plan.GitDirs[0].Role != RoleTopLevel {
		t.Errorf("worktree box: top level git dir %+v, want %s", plan.GitDirs[0], admin)
	}
}

// setupWorktreeBox is setupNamespace with the plan made from the linked worktree wt.
func setupWorktreeBox(t *testing.T) *nsEnv {
	return setupNamespace(t, func(e *nsEnv) { e.planDir = filepath.Join(e.root, "wt") })
}

// worktreeAttacks is the table of writes an agent in a linked worktree's box tries on what
// it can reach of the common dir, run in the worktree ($W is the common dir).
func worktreeAttacks() []attack {
	hook := `printf '#!/bin/sh\ntouch %s/hook\n' "$C" >`
	return []attack{
		{"config core.fsmonitor from the worktree", `git config core.fsmonitor "touch $C/fsmonitor"`, blocked},
		{"config core.hooksPath from the worktree", `git config core.hooksPath /tmp`, blocked},
		{"common config appended", `printf '[core]\n\tfsmonitor = touch %s/append\n' "$C" >>"$W/config"`, blocked},
		{"common config renamed over", `cp "$W/config" "$W/c.new" && echo "[core]fsmonitor=x" >>"$W/c.new" && mv "$W/c.new" "$W/config"`, blocked},
		{"worktree config.worktree", `git config --worktree core.fsmonitor "touch $C/wtcfg"`, blocked},
		{"common hook written", hook + `"$W/hooks/post-commit" && chmod +x "$W/hooks/post-commit"`, blocked},
		{"common hooks renamed", `mv "$W/hooks" "$W/hooks.old"`, blocked},
		{"common info/attributes", `echo '* filter=x' >"$W/info/attributes"`, blocked},
		{"common dir renamed", `mv "$W" "$W.away"`, blocked},
		{"own gitdir file", `echo /tmp/x/.git >"$W/worktrees/wt/gitdir"`, blocked},
		{"own commondir file", `echo /tmp >"$W/worktrees/wt/commondir"`, blocked},
		{"own admin dir renamed", `mv "$W/worktrees/wt" "$W/worktrees/wt2"`, blocked},
		{"worktree .git file rewritten", `printf 'gitdir: /tmp\n' >.git`, blocked},
		{"submodule hook in the common dir", hook + `"$W/modules/a/hooks/pre-commit"`, blocked},
	}
}

// TestNamespaceWorktreeBox applies a linked worktree's guest script and attacks from the
// worktree: every write is blocked in the box and the host has nothing to restore. The same
// attacks without the shadow (the control) succeed and the host-side verifier restores each.
// Then the host's git in the main checkout and the worktree runs nothing.
func TestNamespaceWorktreeBox(t *testing.T) {
	ctx := context.Background()
	for _, shadowed := range []bool{true, false} {
		e := setupWorktreeBox(t)
		e.noShadow = !shadowed
		wt := filepath.Join(e.root, "wt")
		for _, a := range worktreeAttacks() {
			out, err := e.inBox(wt, `W=$R/work/.git; `+a.sh)
			changes, verr := Verify(ctx, e.snap)
			if verr != nil {
				t.Errorf("shadow=%v %s: verify: %v", shadowed, a.name, verr)
			}
			switch {
			case shadowed && err == nil:
				t.Errorf("%s: the write succeeded in the worktree's box:\n%s", a.name, out)
			case shadowed && len(changes) > 0:
				t.Errorf("%s: the guest did not block it, the host restored %+v", a.name, changes)
			case !shadowed && err != nil:
				t.Errorf("control %s: failed without a shadow (%v), so the test proves nothing for it:\n%s", a.name, err, out)
			case !shadowed && len(changes) == 0:
				t.Errorf("control %s: the host-side verifier reported nothing", a.name)
			}
		}
		assertHostGitRunsNothing(t, e)
	}
}

// TestNamespaceWorktreeBoxGitWorks: git in the worktree's box commits, branches and tags with
// the common dir shadowed, and the commit is the worktree branch's new commit on the host.
func TestNamespaceWorktreeBoxGitWorks(t *testing.T) {
	e := setupWorktreeBox(t)
	wt := filepath.Join(e.root, "wt")
	before := run(t, wt, "git", "rev-parse", "wtbranch")
	for _, sh := range []string{
		`git status >/dev/null && echo in-box >>file && git commit -qam "in box" && git log --oneline -1`,
		`git branch -q box-branch && git tag box-tag && git -c core.pager=cat log -1 >/dev/null`,
	} {
		if out, err := e.inBox(wt, sh); err != nil {
			t.Errorf("git in the worktree's box: %s: %v\n%s", sh, err, out)
		}
	}
	after := run(t, wt, "git", "rev-parse", "wtbranch")
	if after == before || run(t, wt, "git", "log", "-1", "--format=%s", "wtbranch") != "in box\n" {
		t.Errorf("the box's commit is not wtbranch's new commit on the host: %s -> %s", before, after)
	}
	if changes, err := Verify(context.Background(), e.snap); err != nil || len(changes) > 0 {
		t.Errorf("ordinary git work in the worktree changed protected metadata: %v %+v", err, changes)
	}
}

// TestNamespaceWorktreeGitMountNosuid: when the common dir is a mount of its own (as Lima mounts
// it in a worktree's box), the guest script makes it nosuid and nodev, as the privilege drop
// makes the project mount, and the pins still hold; without the script (the control) the same
// mount allows setuid. The common dir is bind-mounted onto itself here, standing in for 9p.
func TestNamespaceWorktreeGitMountNosuid(t *testing.T) {
	e := setupWorktreeBox(t)
	common := filepath.Join(e.root, "work/.git")
	for _, shadowed := range []bool{true, false} {
		script := e.script
		if !shadowed {
			script = "/dev/null"
		}
		inner := `set -e; mount -t tmpfs tmpfs /var/lib; ` + sharedRoot + ` mount --bind "$2" "$2"; mount --make-shared "$2"
sh "$1" >/dev/null; sh "$1" >/dev/null; findmnt -rn -o OPTIONS --mountpoint "$2" | head -n 1`
		cmd := exec.Command("unshare", "-m", "--propagation", "private", "--", "sh", "-c", inner, "_", script, common)
		cmd.Env = append(os.Environ(), "R="+e.root)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("shadow=%v: %v\n%s", shadowed, err, out)
		}
		opts := "," + strings.TrimSpace(string(out)) + ","
		nosuid := strings.Contains(opts, ",nosuid,") && strings.Contains(opts, ",nodev,")
		if nosuid != shadowed {
			t.Errorf("shadow=%v: the common dir's mount options %s", shadowed, opts)
		}
	}
	if out, err := e.inBox(filepath.Join(e.root, "wt"), `printf '#!/bin/sh\n' >"$R/work/.git/hooks/x"`); err == nil {
		t.Errorf("a hook was written in the common dir with the script applied:\n%s", out)
	}
}
