package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/git-corral/git-corral/project"
)

// TestGuessBox: the box guessed from the directory tree (before git runs) is git's own box for
// the layouts people work in: the top of a checkout, a directory inside it, a path through a
// symbolic link, a linked worktree (".git" is a file), a submodule. Where git's answer differs
// (GIT_DIR and GIT_WORK_TREE name another tree) the guess differs too, and Open then uses git's
// box and drops the early report (open.go): the guess is never trusted on its own.
func TestGuessBox(t *testing.T) {
	p := gitRepo(t)
	top := p.TopLevel
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	sub := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(top, link); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(filepath.Dir(top), "wt")
	git("-C", top, "worktree", "add", "-q", wt)
	other := filepath.Join(filepath.Dir(top), "other")
	git("init", "-q", other)
	git("-C", other, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "--allow-empty", "-m", "o")
	git("-C", top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", other, "mod")
	ctx := context.Background()
	for _, dir := range []string{top, sub, link, filepath.Join(link, "a"), wt, filepath.Join(top, "mod")} {
		want, err := project.Find(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := guessBox(dir); got != want.Box {
			t.Errorf("guessBox(%s) = %q, git names %q", dir, got, want.Box)
		}
	}
	if got := guessBox(filepath.Dir(filepath.Dir(top))); got != "" {
		t.Errorf("guessBox outside any checkout = %q, want none", got)
	}
	// Git told to use another tree: git's box is that tree's, the guess is the directory's.
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	want, err := project.Find(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if got := guessBox(sub); got == want.Box || want.Box != project.BoxName(mustReal(t, other)) {
		t.Errorf("with GIT_DIR: guess %q, git %q: want them to differ (git names %s)", got, want.Box, other)
	}
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
