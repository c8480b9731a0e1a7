package session

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
)

// worktreeOf adds a linked worktree of main at dir (git worktree add) and finds it.
func worktreeOf(t *testing.T, main *project.Project, dir string) *project.Project {
	t.Helper()
	if out, err := exec.Command("git", "-C", main.TopLevel, "worktree", "add", "-q", dir, "-b", filepath.Base(dir)).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v %s", err, out)
	}
	p, err := project.Find(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGitMountsLinkedWorktree: a linked worktree's box mounts the main repository's git dir
// (only it, not the main work tree); an ordinary checkout's box mounts nothing more (the
// control), and both pass the mount guard.
func TestGitMountsLinkedWorktree(t *testing.T) {
	main := gitRepo(t)
	h := home.Home{Dir: filepath.Join(t.TempDir(), "corral")}
	if gm := GitMounts(main); gm != nil {
		t.Errorf("ordinary checkout: git mounts %q, want none", gm)
	}
	wt := worktreeOf(t, main, filepath.Join(filepath.Dir(main.TopLevel), "wt-x"))
	want := filepath.Join(main.TopLevel, ".git")
	if gm := GitMounts(wt); !slices.Equal(gm, []string{want}) {
		t.Errorf("linked worktree: git mounts %q, want [%q]", gm, want)
	}
	for _, p := range []*project.Project{main, wt} {
		if err := CheckGitMounts(p, h, os.Getenv); err != nil {
			t.Errorf("%s: %v", p.TopLevel, err)
		}
	}
	if gm := GitMounts(nil); gm != nil {
		t.Errorf("a box without a project: git mounts %q", gm)
	}
}

// TestCheckGitMountsRefused is the table of common dirs a worktree's box may not mount, each
// refused with the path named; the control is the same worktree with its real common dir.
func TestCheckGitMountsRefused(t *testing.T) {
	main := gitRepo(t)
	root := filepath.Dir(main.TopLevel)
	h := home.Home{Dir: filepath.Join(t.TempDir(), "corral")}
	wt := worktreeOf(t, main, filepath.Join(root, "wt-y"))
	if err := CheckGitMounts(wt, h, os.Getenv); err != nil {
		t.Fatalf("control: %v", err)
	}
	if err := os.Symlink(root, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	trusted := filepath.Join(os.Getenv("HOME"), ".config", "main", ".git")
	if err := os.MkdirAll(trusted, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, top, common, want string
	}{
		{"through a symlink", wt.TopLevel, filepath.Join(root, "link", "proj", ".git"), "symlink"},
		{"holding the worktree", filepath.Join(main.TopLevel, ".git", "wt-z"), filepath.Join(main.TopLevel, ".git"), "inside it"},
		{"in a trusted place", wt.TopLevel, trusted, ".config"},
		{"missing", wt.TopLevel, filepath.Join(root, "gone", ".git"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &project.Project{TopLevel: tc.top, GitDir: filepath.Join(tc.common, "worktrees", "x"), CommonDir: tc.common}
			err := CheckGitMounts(p, h, os.Getenv)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.common) && !strings.Contains(err.Error(), filepath.Dir(tc.common)) {
				t.Errorf("common dir %q: %v, want a refusal naming it and %q", tc.common, err, tc.want)
			}
		})
	}
	p := &project.Project{TopLevel: wt.TopLevel, GitDir: wt.GitDir, CommonDir: trusted}
	if err := CheckGitMounts(p, h, os.Getenv); !errors.Is(err, home.ErrHostPath) {
		t.Errorf("a common dir in ~/.config: %v, want home.ErrHostPath", err)
	}
}
