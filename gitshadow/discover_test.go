package gitshadow

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestDiscoverFindsEveryGitDir(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	plan := discover(t, work)
	roles := map[string]Role{}
	for _, g := range plan.GitDirs {
		roles[g.Path] = g.Role
	}
	want := map[string]Role{
		filepath.Join(work, ".git"):                     RoleTopLevel,
		filepath.Join(work, ".git/modules/a"):           RoleSubmodule,
		filepath.Join(work, ".git/modules/a/modules/b"): RoleSubmodule,
		filepath.Join(work, "plain/.git"):               RoleSubmodule,
		filepath.Join(work, ".git/worktrees/wt"):        RoleWorktree,
	}
	for p, r := range want {
		if roles[p] != r {
			t.Errorf("git dir %s: role %q, want %q (plan: %v)", p, roles[p], r, roles)
		}
	}
	for _, p := range []string{
		filepath.Join(work, "project.gitconfig"), // include.path of .git/config
		filepath.Join(work, "a/.husky"),          // core.hooksPath of submodule a
		filepath.Join(work, "a/.git"),            // .git file of an absorbed submodule
		filepath.Join(work, "a/b/.git"),          // at depth 2
	} {
		if !slices.Contains(plan.HostExecutedPaths, p) {
			t.Errorf("HostExecutedPaths lacks %s: %v", p, plan.HostExecutedPaths)
		}
	}
	kinds := map[string]Kind{}
	for _, s := range plan.AllShadows() {
		kinds[s.Path] = s.Kind
	}
	for p, k := range map[string]Kind{
		filepath.Join(work, ".git"):                           Pin,
		filepath.Join(work, ".git/config"):                    Copy,
		filepath.Join(work, ".git/config.worktree"):           Copy,
		filepath.Join(work, ".git/hooks"):                     Empty,
		filepath.Join(work, ".git/commondir"):                 Watched,
		filepath.Join(work, ".git/worktrees/wt/commondir"):    ReadOnly,
		filepath.Join(work, ".git/worktrees/wt/gitdir"):       ReadOnly,
		filepath.Join(work, ".git/modules"):                   Pin,
		filepath.Join(work, ".git/modules/a/modules/b/hooks"): Empty,
		filepath.Join(work, "a/.husky"):                       ReadOnly,
	} {
		if kinds[p] != k {
			t.Errorf("shadow of %s: %q, want %q", p, kinds[p], k)
		}
	}
}

func TestDiscoverLinkedWorktree(t *testing.T) {
	root := fixture(t)
	plan := discover(t, filepath.Join(root, "wt"))
	common := filepath.Join(root, "work/.git")
	if !slices.Contains(plan.OutsideTopLevel, common) {
		t.Errorf("OutsideTopLevel %v lacks the common dir %s", plan.OutsideTopLevel, common)
	}
	found := false
	for _, g := range plan.GitDirs {
		if g.Path == filepath.Join(common, "worktrees/wt") && g.Role == RoleTopLevel {
			found = true
		}
	}
	if !found {
		t.Errorf("the worktree's own git dir is not the top level: %+v", plan.GitDirs)
	}
}

// TestDiscoverIgnoresHostileGitmodules checks that .gitmodules paths leaving the work tree or
// naming .git are skipped with a warning instead of followed.
func TestDiscoverIgnoresHostileGitmodules(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	for _, bad := range []string{"../../etc", ".git/modules/a", "x/.GIT"} {
		run(t, work, "git", "config", "-f", ".gitmodules", "submodule.evil"+bad+".path", bad)
	}
	plan := discover(t, work)
	for _, g := range plan.GitDirs {
		if !inside(g.Path, root) {
			t.Errorf("git dir outside the fixture: %s", g.Path)
		}
	}
	if len(plan.Warnings) == 0 {
		t.Errorf("no warnings for hostile .gitmodules paths")
	}
}

// TestDiscoverConfigPointers checks that work-tree paths the host's config points at are found
// whatever layer sets them and whatever an includeIf's condition: a global core.hooksPath
// (relative, so inside the work tree), an includeIf that does not match now, and an include in a
// submodule's config.
func TestDiscoverConfigPointers(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	run(t, work, "git", "config", "--global", "core.hooksPath", ".githooks")
	run(t, work, "git", "config", "includeIf.onbranch:not-now.path", "../cond.gitconfig")
	run(t, work, "git", "-C", "a/b", "config", "include.path", "../../../../../b.gitconfig")
	plan := discover(t, work)
	for _, p := range []string{
		filepath.Join(work, ".githooks"),
		filepath.Join(work, "cond.gitconfig"),
		filepath.Join(work, "b.gitconfig"),
	} {
		if !slices.Contains(plan.HostExecutedPaths, p) {
			t.Errorf("HostExecutedPaths lacks %s: %v", p, plan.HostExecutedPaths)
		}
	}
}
