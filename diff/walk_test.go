package diff

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestGitMetaWanted(t *testing.T) {
	for rel, want := range map[string]bool{
		"config": true, "CONFIG": true, "config.worktree": true, "commondir": true, "hooks/pre-commit": true,
		"Hooks/x": true, "info/attributes": true, "info/exclude": true, "objects/info/alternates": true,
		"refs/replace/abc": true, "worktrees/w/config.worktree": true, "worktrees/w/gitdir": true,
		"worktrees/w/hooks/x": true, "index": false, "HEAD": false, "objects/ab/cdef": false,
		"refs/heads/main": false, "logs/HEAD": false, "packed-refs": false, "config/x": false,
		"worktrees/w/index": false, "FETCH_HEAD": false,
	} {
		if got := gitMetaWanted(rel); got != want {
			t.Errorf("gitMetaWanted(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestOpenRefusesSwaps: a directory or file replaced (by a symlink or another inode) after the
// walk listed it is refused, so reading cannot leave the tree.
func TestOpenRefusesSwaps(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("in"), 0o600); err != nil {
		t.Fatal(err)
	}
	de, _ := lstatEntry(dir, "d")
	fe, _ := lstatEntry(filepath.Join(dir, "secret"), "d/secret")
	if f, err := openDir(dir, de); err != nil {
		t.Fatalf("openDir before the swap: %v", err)
	} else {
		f.Close()
	}
	if err := os.Rename(dir, filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := openDir(dir, de); err == nil {
		t.Error("openDir followed a symlink swapped in for the directory")
	}
	if _, err := readVerified(filepath.Join(dir, "secret"), fe, 10); !errors.Is(err, errChanged) {
		t.Errorf("readVerified through a swapped parent: err = %v, want errChanged", err)
	}
}
