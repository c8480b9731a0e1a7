package clone

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotTrackedDelivered is source = "clone" for an existing checkout: the box gets HEAD
// plus the uncommitted changes to tracked files, as uncommitted changes; untracked files never
// leave the checkout, and a tracked file swapped for a symlink to a host secret travels as a
// symlink, never as the secret.
func TestSnapshotTrackedDelivered(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"README": "v1\n", "a.txt": "a\n", "dir/b.txt": "b\n", "config.txt": "c\n", ".gitignore": ".env\n"})
	secret := filepath.Join(root, "host-secret")
	must(t, os.WriteFile(secret, []byte("SECRET=hunter2\n"), 0o600))
	writeFiles(t, work, map[string]string{"README": "v2\n", ".env": "SECRET=hunter2\n", "new.txt": "untracked\n", "staged.txt": "staged\n", "dir/b.txt": "b2\n"})
	git(t, work, "add", "staged.txt")
	must(t, os.Remove(filepath.Join(work, "a.txt")))
	must(t, os.Remove(filepath.Join(work, "config.txt")))
	must(t, os.Symlink(secret, filepath.Join(work, "config.txt")))
	g := newGuest(t)
	check := recordGit(t, root)

	store := filepath.Join(root, "home", ".corral", "clones", "work-1.git")
	if _, err := Fetch(bg(), work, store, Options{}); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	changed, err := SnapshotTracked(bg(), work, store)
	if err != nil || !changed {
		t.Fatalf("SnapshotTracked: %v, %v", changed, err)
	}
	dir := g.Path("work")
	if err := Deliver(bg(), g, store, DeliverOptions{Dir: dir}); err != nil {
		t.Fatalf("Deliver: %v\n%s", err, g.Stderr())
	}
	check()
	status := inGuest(t, g, dir, "git status --porcelain; cat README dir/b.txt staged.txt; readlink config.txt; git tag")
	want := "M README\n D a.txt\n T config.txt\n M dir/b.txt\n?? staged.txt\nv2\nb2\nstaged\n" + secret
	if status != want {
		t.Errorf("guest work tree:\n%s\nwant\n%s", status, want)
	}
	for _, p := range []string{".env", "new.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("untracked %s reached the box: %v", p, err)
		}
	}
	// No object anywhere in the store holds the secret or an untracked file's content.
	objs := git(t, store, "cat-file", "--batch-all-objects", "--batch")
	if strings.Contains(objs, "hunter2") || strings.Contains(objs, "untracked") {
		t.Error("the store holds the content of an untracked file or of a symlink's host target")
	}
	// A clean checkout gives no snapshot.
	clean := filepath.Join(root, "clean")
	makeRepo(t, clean, map[string]string{"x": "x\n"})
	store2 := filepath.Join(root, "home", ".corral", "clones", "clean-1.git")
	if _, err := Fetch(bg(), clean, store2, Options{}); err != nil {
		t.Fatal(err)
	}
	if changed, err := SnapshotTracked(bg(), clean, store2); err != nil || changed {
		t.Errorf("clean checkout: changed=%v err=%v", changed, err)
	}
}

// TestHeadFile reads a clone-mode repository's .corral.toml from the store's HEAD, refusing a
// symlink in its place.
func TestHeadFile(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{".corral.toml": "network = \"offline\"\n"})
	store := filepath.Join(root, "home", ".corral", "clones", "h.git")
	if _, err := Fetch(bg(), work, store, Options{}); err != nil {
		t.Fatal(err)
	}
	data, err := HeadFile(store, ".corral.toml", 1<<16)
	if err != nil || string(data) != "network = \"offline\"\n" {
		t.Errorf("HeadFile = %q, %v", data, err)
	}
	if _, err := HeadFile(store, "missing.toml", 1<<16); !errors.Is(err, ErrNoFile) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := HeadFile(store, ".corral.toml", 4); err == nil {
		t.Error("oversized file read")
	}
	link := filepath.Join(root, "link")
	makeRepo(t, link, map[string]string{"x": "x"})
	must(t, os.Symlink("/etc/passwd", filepath.Join(link, ".corral.toml")))
	git(t, link, "add", "-A")
	git(t, link, "commit", "-q", "-m", "link")
	store2 := filepath.Join(root, "home", ".corral", "clones", "l.git")
	if _, err := Fetch(bg(), link, store2, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := HeadFile(store2, ".corral.toml", 1<<16); !errors.Is(err, ErrNoFile) {
		t.Errorf("symlinked .corral.toml: %v, want ErrNoFile", err)
	}
}
