package gitshadow

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
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
