package session

// This file decides the git mounts of a mounted checkout's box: what git needs besides the top
// level. A linked worktree is its own box (its top level names it), but its .git is a file
// naming <main>/.git/worktrees/<name>, whose commondir is the main repository's git dir; git in
// the box needs both. Its rules:
//
//   - Only the common dir is added (it holds the worktree's own git dir under worktrees/), never
//     the main work tree; nothing is added for an ordinary checkout, or when the common dir is
//     already inside the top level.
//   - It is mounted at its real path, because the worktree's .git file and the common dir's
//     worktrees/<name>/commondir name it so; a common dir reached through a symlink is refused.
//   - It must pass the mount guard like the project (home.CheckExtraMount), and may not hold
//     the top level (a worktree inside the main repository's .git).
//   - It is shadowed and verified like any git dir (gitshadow plans it as RoleCommon).

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/project"
)

// GitMounts returns the host directories a box for p mounts besides p's top level: a linked
// worktree's common dir, or nothing.
func GitMounts(p *project.Project) []string {
	if p == nil || !p.Linked() || under(p.CommonDir, p.TopLevel) {
		return nil
	}
	return []string{p.CommonDir}
}

// CheckGitMounts refuses the git mounts of p that the box may not have: a common dir that is
// reached through a symlink, holds the top level, or is (or lies in) a place the host trusts.
func CheckGitMounts(p *project.Project, h home.Home, getenv func(string) string) error {
	for _, d := range GitMounts(p) {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return fmt.Errorf("mount the main repository's git dir %q of linked worktree %q: %w", d, p.TopLevel, err)
		}
		if real != d {
			return hint.With(fmt.Errorf("mount the main repository's git dir %q of linked worktree %q: it is reached through a symlink (%q)", d, p.TopLevel, real),
				"recreate the worktree with real paths: 'git worktree repair' from the main checkout at its real path")
		}
		if under(p.TopLevel, d) {
			return fmt.Errorf("mount the main repository's git dir %q of linked worktree %q: the worktree lies inside it", d, p.TopLevel)
		}
		if err := h.CheckExtraMount(d, getenv); err != nil {
			return mountHint(fmt.Errorf("mount the main repository's git dir of linked worktree %q: %w", p.TopLevel, err))
		}
	}
	return nil
}

// under reports whether path is dir or lies below it.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
