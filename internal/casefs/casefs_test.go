//go:build linux

package casefs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// mount serves a fresh backing directory and returns it and the mount point.
func mount(t *testing.T) (backing, mnt string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a FUSE filesystem with mount(2)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse: %v", err)
	}
	base := t.TempDir()
	backing, mnt = filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Mount(context.Background(), backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return backing, mnt
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// names lists a backing directory, so a test sees the spellings actually stored.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func ino(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestOtherSpellingsReachOneFile: what is made under one spelling is read, listed and written
// under every other spelling that folds alike, and stored once, in the spelling it was made with.
func TestOtherSpellingsReachOneFile(t *testing.T) {
	backing, mnt := mount(t)
	if err := os.MkdirAll(filepath.Join(mnt, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(mnt, ".git", "config"), "[core]\n")
	write(t, filepath.Join(mnt, "a"), "one\n")
	write(t, filepath.Join(mnt, "straße"), "street\n")
	write(t, filepath.Join(mnt, "Makefile"), "all:\n")
	for _, c := range []struct{ made, other string }{
		{"a", "A"},
		{"Makefile", "makefile"},
		{"Makefile", "MAKEFILE"},
		{".git/config", ".GIT/CONFIG"},
		{".git/config", ".Git/Config"},
		{".git/hooks", ".git/hoo\u212As"}, // KELVIN SIGN folds to k
		{"straße", "STRASSE"},             // full case folding: ß is ss
	} {
		t.Run(c.other, func(t *testing.T) {
			if a, b := ino(t, filepath.Join(mnt, c.made)), ino(t, filepath.Join(mnt, c.other)); a != b {
				t.Errorf("%s is inode %d, %s is inode %d: not one file", c.made, a, c.other, b)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(mnt, "A")); string(got) != "one\n" {
		t.Errorf("reading A: %q, want what was written to a", got)
	}
	f, err := os.OpenFile(filepath.Join(mnt, ".GIT", "CONFIG"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\tfsmonitor = x\n")
	f.Close()
	if got, _ := os.ReadFile(filepath.Join(backing, ".git", "config")); string(got) != "[core]\n\tfsmonitor = x\n" {
		t.Errorf("a write through .GIT/CONFIG left .git/config holding %q", got)
	}
	write(t, filepath.Join(mnt, ".Git", "Hooks", "pre-commit"), "#!/bin/sh\n")
	if got := names(t, filepath.Join(backing, ".git", "hooks")); !slices.Equal(got, []string{"pre-commit"}) {
		t.Errorf("backing .git/hooks holds %q after a write to .Git/Hooks/pre-commit", got)
	}
	if got := names(t, filepath.Join(mnt, ".GIT")); !slices.Equal(got, []string{"config", "hooks"}) {
		t.Errorf("listing .GIT through the mount gives %q, want the stored spellings", got)
	}
	if got := names(t, backing); !slices.Equal(got, []string{".git", "Makefile", "a", "straße"}) {
		t.Errorf("backing directory holds %q: a spelling made a second entry", got)
	}
}

// TestNoSecondEntryUnderAnotherSpelling: exclusive create, mkdir and symlink of a name that folds
// like an existing entry fail with EEXIST, as on a case-insensitive kernel filesystem.
func TestNoSecondEntryUnderAnotherSpelling(t *testing.T) {
	backing, mnt := mount(t)
	write(t, filepath.Join(mnt, "file"), "x")
	if err := os.Mkdir(filepath.Join(mnt, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"create FILE O_EXCL": func() error {
			f, err := os.OpenFile(filepath.Join(mnt, "FILE"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		},
		"mkdir DIR":      func() error { return os.Mkdir(filepath.Join(mnt, "DIR"), 0o755) },
		"mkdir File":     func() error { return os.Mkdir(filepath.Join(mnt, "File"), 0o755) },
		"symlink Dir":    func() error { return os.Symlink("x", filepath.Join(mnt, "Dir")) },
		"link to fILE":   func() error { return os.Link(filepath.Join(mnt, "file"), filepath.Join(mnt, "fILE")) },
		"mkdir dIr/ (2)": func() error { return os.Mkdir(filepath.Join(mnt, "dIr"), 0o700) },
	} {
		if err := op(); !errors.Is(err, os.ErrExist) {
			t.Errorf("%s: %v, want EEXIST", name, err)
		}
	}
	if got := names(t, backing); !slices.Equal(got, []string{"dir", "file"}) {
		t.Errorf("backing directory holds %q", got)
	}
}

// TestRenameAndUnlinkFold: git's lock-file dance (write config.lock, rename it onto CONFIG)
// replaces the one config file; a case-only rename keeps the one entry; unlink and rmdir
// under another spelling remove the entry.
func TestRenameAndUnlinkFold(t *testing.T) {
	backing, mnt := mount(t)
	write(t, filepath.Join(mnt, "config"), "old\n")
	write(t, filepath.Join(mnt, "config.lock"), "new\n")
	if err := os.Rename(filepath.Join(mnt, "config.lock"), filepath.Join(mnt, "CONFIG")); err != nil {
		t.Fatal(err)
	}
	if got := names(t, backing); !slices.Equal(got, []string{"config"}) {
		t.Errorf("after rename onto CONFIG the backing directory holds %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(backing, "config")); string(got) != "new\n" {
		t.Errorf("config holds %q after the rename", got)
	}
	if err := os.Rename(filepath.Join(mnt, "config"), filepath.Join(mnt, "Config")); err != nil {
		t.Fatal(err)
	}
	if got := names(t, backing); !slices.Equal(got, []string{"config"}) { // see Rename
		t.Errorf("after a case-only rename the backing directory holds %q", got)
	}
	if err := os.Remove(filepath.Join(mnt, "CONFIG")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(mnt, "d"), 0o755)
	if err := os.Remove(filepath.Join(mnt, "D")); err != nil {
		t.Fatal(err)
	}
	if got := names(t, backing); len(got) != 0 {
		t.Errorf("after unlink and rmdir under other spellings the backing directory holds %q", got)
	}
}

// TestInotifySeesOtherSpellings: a watch on a directory (by its canonical name) sees a file
// created, written and removed through the mount under another spelling of the directory and the
// file, because every spelling reaches the same kernel inode. This is what gitshadow.Watch needs.
func TestInotifySeesOtherSpellings(t *testing.T) {
	_, mnt := mount(t)
	hooks := filepath.Join(mnt, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(mnt, ".git", "config"), "[core]\n")
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, d := range []string{hooks, filepath.Join(mnt, ".git")} {
		if err := w.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func() error
		want fsnotify.Op
	}{
		{".Git/Hooks/pre-commit created", func() error {
			return os.WriteFile(filepath.Join(mnt, ".Git", "Hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
		}, fsnotify.Create},
		{".GIT/CONFIG appended", func() error {
			f, err := os.OpenFile(filepath.Join(mnt, ".GIT", "CONFIG"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("\tfsmonitor = x\n")
			return err
		}, fsnotify.Write},
		{".git/hoo\u212As/pre-commit removed", func() error {
			return os.Remove(filepath.Join(mnt, ".git", "hoo\u212As", "pre-commit"))
		}, fsnotify.Remove},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !sawEvent(w, s.want) {
			t.Errorf("%s: no %v event within a second", s.name, s.want)
		}
	}
}

// sawEvent waits up to a second for an event with op.
func sawEvent(w *fsnotify.Watcher, op fsnotify.Op) bool {
	deadline := time.After(time.Second)
	for {
		select {
		case ev := <-w.Events:
			if ev.Has(op) {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// TestMountRefusesAFile: the backing path must be a directory.
func TestMountRefusesAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	write(t, f, "")
	if _, err := Mount(context.Background(), f, t.TempDir()); err == nil {
		t.Fatal("mounted a file")
	}
}

// TestUnmountBusyAbortsTheConnection: a file left open on the mount makes a clean unmount fail;
// Unmount then aborts the connection and unmounts, so the server stops and the holder gets
// errors instead of hanging on a server that no longer answers, and nothing stays mounted.
func TestUnmountBusyAbortsTheConnection(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a FUSE filesystem with mount(2)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse: %v", err)
	}
	saved := unmountTries
	unmountTries = 2
	t.Cleanup(func() { unmountTries = saved })
	base := t.TempDir()
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	os.Mkdir(backing, 0o755)
	os.Mkdir(mnt, 0o755)
	s, err := Mount(context.Background(), backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(mnt, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.Unmount(); err == nil {
		t.Fatal("Unmount of a busy mount reported success")
	}
	served := make(chan struct{})
	go func() { s.server.Wait(); close(served) }()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("the server still runs: the connection was not aborted")
	}
	done := make(chan error, 1)
	go func() { _, err := f.Stat(); done <- err }() // attributes are never cached: asks the server
	select {
	case err := <-done:
		if err == nil {
			t.Error("stat of a file of an aborted mount succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stat of a file of an aborted mount hung")
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), " "+mnt+" ") {
		t.Errorf("%s is still mounted", mnt)
	}
}
