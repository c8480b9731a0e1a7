package gitshadow

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/casefs/casefstest"
)

// A case-insensitive host filesystem (macOS by default) resolves .GIT/CONFIG, .git/Hooks and
// even .git/hoo\u212As (KELVIN SIGN folds to k) to the real files, so a write under such a
// spelling sidesteps guest bind mounts made on the canonical names. The host must catch those
// writes anyway: Watch compares names with Unicode case folding and Verify compares content, not
// names.

// spellings are the case-variant writes every case test makes, relative to the work tree.
var spellings = []struct{ name, path, data string }{
	{"upper-case config", ".GIT/CONFIG", "[core]\n\tfsmonitor = touch \"$C/cf-config\"\n"},
	{"mixed-case hooks dir", ".Git/Hooks/pre-commit", "#!/bin/sh\ntouch \"$C/cf-hook\"\n"},
	{"kelvin sign in hooks", ".git/hoo\u212As/post-checkout", "#!/bin/sh\ntouch \"$C/cf-kelvin\"\n"},
}

// caseRepo builds a small repository in dir with fixed dates and returns its work tree.
func caseRepo(t *testing.T, dir string) string {
	t.Helper()
	hermetic(t, dir)
	work := filepath.Join(dir, "work")
	run(t, dir, "git", "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "file"), []byte("x\n"), 0o644)
	run(t, work, "git", "add", "file")
	run(t, work, "git", "commit", "-q", "-m", "base")
	return work
}

// attackSpellings watches the repository, writes through every spelling (appending, as an
// attacker adding to config would), and checks that Watch reported and restored each write and
// that the host's git then runs nothing planted.
// Changes to paths in aliases (the test's own stand-ins for a case-insensitive filesystem) are
// expected and ignored.
func attackSpellings(t *testing.T, dir, work string, aliases ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Only events may trigger a check here: the periodic backstop would hide a watcher that
	// misses a spelling.
	saved := WatchInterval
	WatchInterval = time.Hour
	defer func() { WatchInterval = saved }()
	plan := discover(t, work)
	snap, err := TakeSnapshot(ctx, plan, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []Change
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, snap, func(c Change) { mu.Lock(); got = append(got, c); mu.Unlock() }) }()
	time.Sleep(100 * time.Millisecond) // let the watches be added
	canary := filepath.Join(dir, "canary")
	os.Mkdir(canary, 0o777)
	for _, s := range spellings {
		mu.Lock()
		before := len(got)
		mu.Unlock()
		f, err := os.OpenFile(filepath.Join(work, s.path), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o755)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		f.WriteString(s.data)
		f.Close()
		deadline := time.Now().Add(time.Second)
		for {
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if n > before {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: Watch reported nothing within a second", s.name)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cancel()
	<-done
	for _, c := range got {
		if !c.Restored {
			t.Errorf("%s %s: not restored: %s", c.What, c.Path, c.Detail)
		}
	}
	changes, err := Verify(context.Background(), snap)
	if err != nil {
		t.Errorf("final verify: %v", err)
	}
	for _, c := range changes {
		if !slices.Contains(aliases, c.Path) {
			t.Errorf("after Watch, Verify still finds %+v", c)
		}
	}
	for _, argv := range [][]string{{"status"}, {"commit", "-q", "--allow-empty", "-m", "host"}, {"checkout", "-q", "-b", "b2"}} {
		cmd := exec.Command("git", argv...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "C="+canary)
		cmd.Run()
	}
	ents, _ := os.ReadDir(canary)
	for _, e := range ents {
		t.Errorf("host git ran a command planted under another spelling: %s", e.Name())
	}
}

// TestCaseVariantsCasefold runs the spelling attacks on real case-insensitive filesystems: a
// case-folding ext4 image on a loop device with chattr +F on the repository's directory (where
// the kernel has CONFIG_UNICODE), and a case-folding FUSE loopback (internal/casefs), which runs
// wherever there is /dev/fuse. On both, every spelling reaches the one kernel inode of the real
// file, so the host's inotify watch sees writes made through the mount under any spelling.
func TestCaseVariantsCasefold(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a case-folding ext4 image on a loop device and a FUSE filesystem")
	}
	t.Run("ext4", func(t *testing.T) { caseVariantsOn(t, ext4Casefold(t)) })
	t.Run("fuse", func(t *testing.T) { caseVariantsOn(t, casefstest.Dir(t)) })
}

// caseVariantsOn runs the spelling attacks in dir, which must be case-insensitive.
func caseVariantsOn(t *testing.T, dir string) {
	noCollectionWhileServingFUSE(t)
	work := caseRepo(t, dir)
	if _, err := os.Stat(filepath.Join(work, ".GIT", "CONFIG")); err != nil {
		t.Fatalf("the directory is not case-insensitive: %v", err)
	}
	attackSpellings(t, dir, work, filepath.Join(work, ".GIT"), filepath.Join(work, ".Git"))
}

// ext4Casefold mounts a case-folding ext4 image and returns a directory on it with chattr +F,
// or skips when this kernel cannot.
func ext4Casefold(t *testing.T) string {
	base := t.TempDir()
	img, mnt := filepath.Join(base, "cf.img"), filepath.Join(base, "mnt")
	os.Mkdir(mnt, 0o755)
	run(t, base, "truncate", "-s", "64M", img)
	if out, err := exec.Command("mkfs.ext4", "-q", "-O", "casefold", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4 -O casefold unavailable: %v %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		// One line, so that a summary showing a skip's last line shows why.
		t.Skipf("mount said %q: this kernel cannot mount a casefold ext4 image (built without CONFIG_UNICODE?); the FUSE variant runs instead",
			strings.Join(strings.Fields(string(out)), " "))
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	dir := filepath.Join(mnt, "ci")
	os.Mkdir(dir, 0o755)
	run(t, base, "chattr", "+F", dir)
	return dir
}

// TestCaseVariantsAliases runs the same attacks on any filesystem by giving the real files the
// other spellings a case-insensitive filesystem would resolve: a hard link for the file,
// symlinks for the directories. It proves the watcher's folding and the content comparison
// without needing kernel casefold support.
func TestCaseVariantsAliases(t *testing.T) {
	dir, err := os.MkdirTemp("", "gitshadow-case-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	work := caseRepo(t, dir)
	gd := filepath.Join(work, ".git")
	for _, err := range []error{
		os.Symlink(".git", filepath.Join(work, ".GIT")),
		os.Link(filepath.Join(gd, "config"), filepath.Join(gd, "CONFIG")),
		os.Symlink(".git", filepath.Join(work, ".Git")),
		os.Symlink("hooks", filepath.Join(gd, "Hooks")),
		os.Symlink("hooks", filepath.Join(gd, "hoo\u212As")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	attackSpellings(t, dir, work, filepath.Join(work, ".GIT"), filepath.Join(work, ".Git"))
}
