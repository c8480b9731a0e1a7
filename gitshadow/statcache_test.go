package gitshadow

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/casefs/casefstest"
)

// tinyRepo makes a repository with one commit and returns its top level.
func tinyRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	hermetic(t, dir)
	top := filepath.Join(dir, "top")
	run(t, dir, "git", "init", "-q", top)
	run(t, top, "git", "commit", "-q", "--allow-empty", "-m", "init")
	return top
}

// snapshotAt takes the snapshot of the repository at top with the stat cache's clock moved by
// shift: +10 s makes every file old enough for the cache to vouch for it, 0 leaves every file
// just written inside the racy window.
func snapshotAt(t *testing.T, top string, shift time.Duration) *Snapshot {
	t.Helper()
	now = func() time.Time { return time.Now().Add(shift) }
	t.Cleanup(func() { now = time.Now })
	s, err := TakeSnapshot(context.Background(), discover(t, top), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forgeries rewrite a file with other bytes of the same size and put its old mtime (and atime)
// back, as a box can over the mount: only the host's ctime (and, for a replacement, the inode)
// still tells. Each returns the bytes it wrote.
var forgeries = map[string]func(t *testing.T, path string) []byte{
	"rewritten in place": func(t *testing.T, path string) []byte {
		return forge(t, path, func(data []byte) error { return os.WriteFile(path, data, 0o644) })
	},
	"overwritten without truncating": func(t *testing.T, path string) []byte {
		return forge(t, path, func(data []byte) error {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(data, 0)
			return err
		})
	},
	"replaced by a rename": func(t *testing.T, path string) []byte {
		return forge(t, path, func(data []byte) error {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				return err
			}
			fi, _ := os.Lstat(path)
			os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
			return os.Rename(tmp, path)
		})
	},
}

// forge writes the same number of bytes as path holds, with an fsmonitor planted, and restores
// path's mtime.
func forge(t *testing.T, path string, write func([]byte) error) []byte {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Lstat(path)
	planted := []byte("[core]\n\tfsmonitor=sh\n")
	data := append(planted, bytes.Repeat([]byte("#"), len(old)-len(planted))...)
	if err := write(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Lstat(path)
	if after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the forgery changed size or mtime: %d %v, was %d %v", after.Size(), after.ModTime(), fi.Size(), fi.ModTime())
	}
	return data
}

// TestStatCacheForgedMtime: the stat cache vouches for an unchanged config without reading it,
// yet a config rewritten with the same size and its old mtime put back is read, found, restored
// and reported, because the host's ctime changed.
func TestStatCacheForgedMtime(t *testing.T) {
	for name, f := range forgeries {
		t.Run(name, func(t *testing.T) {
			top := tinyRepo(t)
			s := snapshotAt(t, top, 10*time.Second)
			cfg := filepath.Join(top, ".git", "config")
			orig, _ := os.ReadFile(cfg)
			if _, read, err := s.statFile(cfg, s.Files[cfg]); err != nil || read {
				t.Fatalf("the stat cache does not vouch for an unchanged config (read %v, %v): this test would prove nothing", read, err)
			}
			planted := f(t, cfg)
			if _, read, _ := s.statFile(cfg, s.Files[cfg]); !read {
				t.Error("the stat cache vouched for a config rewritten with a forged mtime")
			}
			changes, err := Verify(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if !hasChange(changes, cfg, "modified") {
				t.Errorf("the forged config was not reported: %+v", changes)
			}
			if got, _ := os.ReadFile(cfg); !bytes.Equal(got, orig) {
				t.Errorf("config not restored:\n%s", got)
			}
			if q := quarantined(changes, cfg); !bytes.Equal(q, planted) {
				t.Errorf("the quarantine holds %q, want the box's version %q", q, planted)
			}
		})
	}
}

// TestStatCacheRacyWindow: a file recorded within two seconds of its last change is read at
// every check, since a write in the same clock tick could leave its ctime as it was; a forged
// rewrite in that window is found.
func TestStatCacheRacyWindow(t *testing.T) {
	for name, f := range forgeries {
		t.Run(name, func(t *testing.T) {
			top := tinyRepo(t)
			cfg := filepath.Join(top, ".git", "config")
			s := snapshotAt(t, top, 0) // git init wrote config a moment ago
			if _, read, _ := s.statFile(cfg, s.Files[cfg]); !read {
				t.Fatal("the stat cache vouched for a config whose ctime is inside the racy window")
			}
			orig, _ := os.ReadFile(cfg)
			f(t, cfg)
			changes, err := Verify(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if !hasChange(changes, cfg, "modified") {
				t.Errorf("a forged config written in the racy window was not reported: %+v", changes)
			}
			if got, _ := os.ReadFile(cfg); !bytes.Equal(got, orig) {
				t.Errorf("config not restored:\n%s", got)
			}
		})
	}
}

// TestStatCacheTrusts is the rule itself: every field must match, and the recorded ctime must
// be more than the racy window older than the record.
func TestStatCacheTrusts(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC).UnixNano()
	old := statKey{Size: 10, Mtime: at - 5e9, Ctime: at - 5e9, Ino: 7, Dev: 1, Mode: 0o100644, UID: 1000, GID: 1000}
	e := statEntry{statKey: old, Hash: "h", At: at}
	other := func(f func(*statKey)) statKey { k := old; f(&k); return k }
	cases := []struct {
		name  string
		e     statEntry
		k     statKey
		trust bool
	}{
		{"unchanged and old", e, old, true},
		{"size", e, other(func(k *statKey) { k.Size++ }), false},
		{"mtime", e, other(func(k *statKey) { k.Mtime++ }), false},
		{"ctime (a forged mtime leaves this)", e, other(func(k *statKey) { k.Ctime++ }), false},
		{"inode (replaced)", e, other(func(k *statKey) { k.Ino++ }), false},
		{"device", e, other(func(k *statKey) { k.Dev++ }), false},
		{"mode", e, other(func(k *statKey) { k.Mode = 0o100755 }), false},
		{"owner", e, other(func(k *statKey) { k.UID = 0 }), false},
		{"group", e, other(func(k *statKey) { k.GID = 0 }), false},
		{"ctime 1 s before the record", statEntry{statKey: other(func(k *statKey) { k.Ctime = at - 1e9 }), Hash: "h", At: at},
			other(func(k *statKey) { k.Ctime = at - 1e9 }), false},
		{"ctime exactly 2 s before the record", statEntry{statKey: other(func(k *statKey) { k.Ctime = at - 2e9 }), Hash: "h", At: at},
			other(func(k *statKey) { k.Ctime = at - 2e9 }), false},
		{"ctime after the record", statEntry{statKey: other(func(k *statKey) { k.Ctime = at + 1 }), Hash: "h", At: at},
			other(func(k *statKey) { k.Ctime = at + 1 }), false},
		{"no hash", statEntry{statKey: old, At: at}, old, false},
	}
	for _, c := range cases {
		if got := c.e.trusts(c.k); got != c.trust {
			t.Errorf("%s: trusts = %v, want %v", c.name, got, c.trust)
		}
	}
}

// TestStatCacheSurvivesLoad: the cache is saved with the snapshot, so the next session's checks
// (a new process) read nothing that did not change, and still find what did.
func TestStatCacheSurvivesLoad(t *testing.T) {
	top := tinyRepo(t)
	s := snapshotAt(t, top, 10*time.Second)
	loaded, err := LoadSnapshot(context.Background(), s.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for p, want := range loaded.Files {
		if want.Type != "file" {
			continue
		}
		files++
		if _, read, err := loaded.statFile(p, want); err != nil || read {
			t.Errorf("%s: read again after load (%v)", p, err)
		}
	}
	if files == 0 {
		t.Fatal("the snapshot holds no file: this test would prove nothing")
	}
	hook := filepath.Join(top, ".git", "hooks", "pre-commit")
	os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	changes, err := Verify(context.Background(), loaded)
	if err != nil || !hasChange(changes, hook, "added") {
		t.Errorf("a planted hook was not found after load: %+v, %v", changes, err)
	}
}

// hasChange reports whether changes hold a restored change of kind what at path.
func hasChange(changes []Change, path, what string) bool {
	for _, c := range changes {
		if c.Path == path && c.What == what && c.Restored {
			return true
		}
	}
	return false
}

// quarantined returns the quarantined copy of path's change.
func quarantined(changes []Change, path string) []byte {
	for _, c := range changes {
		if c.Path == path && c.Quarantine != "" {
			data, _ := os.ReadFile(c.Quarantine)
			return data
		}
	}
	return nil
}

// TestDirStatCache: the snapshot's hooks/ is not listed again while its stat is unchanged, yet
// every way of making a new entry appear in it, or below a subdirectory of it, is found,
// quarantined and reported.
func TestDirStatCache(t *testing.T) {
	plant := []byte("#!/bin/sh\ntouch /tmp/pwned\n")
	cases := []struct {
		name  string
		setup func(hooks string) // before the snapshot
		do    func(hooks string) error
		added string
	}{
		{"new file", nil, func(h string) error { return os.WriteFile(filepath.Join(h, "pre-commit"), plant, 0o755) }, "pre-commit"},
		{"sample renamed to its real name", nil, func(h string) error {
			return os.Rename(filepath.Join(h, "pre-commit.sample"), filepath.Join(h, "pre-commit"))
		}, "pre-commit"},
		{"hard link from outside", nil, func(h string) error {
			out := filepath.Join(filepath.Dir(filepath.Dir(h)), "outside")
			os.WriteFile(out, plant, 0o755)
			return os.Link(out, filepath.Join(h, "post-checkout"))
		}, "post-checkout"},
		{"new file in an existing subdirectory", func(h string) { os.Mkdir(filepath.Join(h, "sub"), 0o755) },
			func(h string) error { return os.WriteFile(filepath.Join(h, "sub", "pre-push"), plant, 0o755) }, "sub/pre-push"},
		{"new file in an inert subdirectory", func(h string) { os.Mkdir(filepath.Join(h, "x.sample"), 0o755) },
			func(h string) error { return os.WriteFile(filepath.Join(h, "x.sample", "pre-push"), plant, 0o755) }, "x.sample/pre-push"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := tinyRepo(t)
			hooks := filepath.Join(top, ".git", "hooks")
			if c.setup != nil {
				c.setup(hooks)
			}
			s := snapshotAt(t, top, 10*time.Second)
			if c.setup == nil {
				k, _ := s.treeKey(hooks)
				if !s.DirStat[hooks].trusts(k) {
					t.Fatal("the stat cache does not vouch for an unchanged hooks/: this test would prove nothing")
				}
			}
			if err := c.do(hooks); err != nil {
				t.Fatal(err)
			}
			changes, err := Verify(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(hooks, filepath.FromSlash(c.added))
			if !hasChange(changes, want, "added") {
				t.Errorf("%s was not found: %+v", want, changes)
			}
			if _, err := os.Lstat(want); !os.IsNotExist(err) {
				t.Errorf("%s is still there (%v)", want, err)
			}
		})
	}
}

// TestStatCacheCaseVariants: on case-insensitive filesystems (case-folding ext4, the FUSE
// loopback), with the stat cache vouching for config and hooks/ and no watcher running, a
// same-size config rewrite with its mtime put back through another spelling, and hooks written
// through other spellings, are all found by Verify alone.
func TestStatCacheCaseVariants(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a case-folding ext4 image on a loop device and a FUSE filesystem")
	}
	t.Run("ext4", func(t *testing.T) { statCacheCaseVariantsOn(t, ext4Casefold(t)) })
	t.Run("fuse", func(t *testing.T) { statCacheCaseVariantsOn(t, casefstest.Dir(t)) })
}

func statCacheCaseVariantsOn(t *testing.T, dir string) {
	noCollectionWhileServingFUSE(t)
	work := caseRepo(t, dir)
	s := snapshotAt(t, work, 10*time.Second)
	cfg, hooks := filepath.Join(work, ".git", "config"), filepath.Join(work, ".git", "hooks")
	k, _ := s.treeKey(hooks)
	if _, read, _ := s.statFile(cfg, s.Files[cfg]); read || !s.DirStat[hooks].trusts(k) {
		t.Fatal("the stat cache does not vouch for config and hooks/: this test would prove nothing")
	}
	forge(t, filepath.Join(work, ".GIT", "CONFIG"), func(data []byte) error {
		return os.WriteFile(filepath.Join(work, ".GIT", "CONFIG"), data, 0o644)
	})
	hooksWritten := map[string]string{".Git/Hooks/pre-commit": "pre-commit", ".git/hoo\u212As/post-checkout": "post-checkout"}
	for spelling := range hooksWritten {
		if err := os.WriteFile(filepath.Join(work, spelling), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatalf("%s: %v", spelling, err)
		}
	}
	changes, err := Verify(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !hasChange(changes, cfg, "modified") {
		t.Errorf("config rewritten as .GIT/CONFIG with its mtime put back was not found: %+v", changes)
	}
	for spelling, name := range hooksWritten {
		// The file system keeps the spelling of the name as it was written.
		found := false
		for _, c := range changes {
			found = found || (c.What == "added" && c.Restored && strings.EqualFold(filepath.Base(c.Path), name))
		}
		if !found {
			t.Errorf("a hook written as %s was not found: %+v", spelling, changes)
		}
	}
}

// TestLoadSnapshotLegacyRecord: a record written before the snapshot kept only the plan's top
// level (the whole plan under "plan") still loads, and one with no top level at all is refused
// rather than checked without its work tree scan.
func TestLoadSnapshotLegacyRecord(t *testing.T) {
	top := tinyRepo(t)
	s := snapshotAt(t, top, 0)
	path := filepath.Join(s.StateDir, "snapshot.json")
	data, _ := os.ReadFile(path)
	field := `"topLevel":` + strconv.Quote(top)
	if !bytes.Contains(data, []byte(field)) {
		t.Fatalf("the record does not hold %s", field)
	}
	legacy := bytes.Replace(data, []byte(field), []byte(`"plan":{"topLevel":`+strconv.Quote(top)+`,"gitDirs":[]}`), 1)
	os.WriteFile(path, legacy, 0o600)
	loaded, err := LoadSnapshot(context.Background(), s.StateDir)
	if err != nil || loaded.TopLevel != top || loaded.Plan.TopLevel != top {
		t.Fatalf("legacy record: %v, top level %q", err, loaded.TopLevel)
	}
	os.WriteFile(path, bytes.Replace(data, []byte(field), []byte(`"x":1`), 1), 0o600)
	if _, err := LoadSnapshot(context.Background(), s.StateDir); err == nil {
		t.Error("a record without a top level loaded")
	}
}

// noCollectionWhileServingFUSE turns the garbage collector off for a test that starts git with
// its working directory on a FUSE mount served by this process (internal/casefs): Go starts a
// program with vfork, the forking thread keeps its P until the child calls exec, so a child whose
// chdir waits on the FUSE server while a collection waits to stop that thread deadlocks the
// whole process (seen in package session's casefold test).
func noCollectionWhileServingFUSE(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}
