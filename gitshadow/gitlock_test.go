package gitshadow

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// lockTestDir is a git dir's config holding fsmonitor, and a snapshot with a quarantine.
func lockTestDir(t *testing.T) (*Snapshot, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte("[core]\n\trepositoryformatversion = 0\n\tfsmonitor = sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "quarantine"), 0o700)
	return &Snapshot{StateDir: dir}, path
}

// TestSanitizeConfigWaitsForGitLock: while git holds config.lock the host neither reads nor
// writes the config; it neutralises what git commits. Control: a stale lock (one git would have
// released long ago, as a box can leave to shield a config) is not waited for.
func TestSanitizeConfigWaitsForGitLock(t *testing.T) {
	t.Run("fresh lock: waits, then neutralises what git committed", func(t *testing.T) {
		s, path := lockTestDir(t)
		lock := path + ".lock"
		if err := os.WriteFile(lock, []byte("[core]\n\tbare = false\n\tfsmonitor = touch /tmp/late\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, _, _, err := s.sanitizeConfig(path); done <- err }()
		time.Sleep(100 * time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("sanitizeConfig returned (%v) while git held config.lock", err)
		default:
		}
		if got, _ := os.ReadFile(path); !bytes.Contains(got, []byte("fsmonitor = sh")) {
			t.Fatalf("the config was written while git held its lock:\n%s", got)
		}
		if err := os.Rename(lock, path); err != nil { // git's commit
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if bytes.Contains(got, []byte("fsmonitor")) || !bytes.Contains(got, []byte("bare = \"false\"")) {
			t.Fatalf("after git's commit the config is\n%s\nwant git's content without fsmonitor", got)
		}
		if _, err := os.Lstat(lock); !os.IsNotExist(err) {
			t.Fatalf("config.lock left behind: %v", err)
		}
	})
	t.Run("stale lock: not waited for", func(t *testing.T) {
		s, path := lockTestDir(t)
		lock := path + ".lock"
		os.WriteFile(lock, nil, 0o644)
		old := time.Now().Add(-time.Minute)
		os.Chtimes(lock, old, old)
		start := time.Now()
		if _, _, _, err := s.sanitizeConfig(path); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > gitLockWait/2 {
			t.Fatalf("waited %v for a stale lock", d)
		}
		if got, _ := os.ReadFile(path); bytes.Contains(got, []byte("fsmonitor")) {
			t.Fatalf("config not neutralised past a stale lock:\n%s", got)
		}
		if _, err := os.Lstat(lock); err != nil {
			t.Fatalf("the box's stale lock was removed: %v", err)
		}
	})
}

// TestRestoreConfigWaitsForGitLock: the restore of a recorded config waits for git's lock as
// the neutraliser does, and a lock a box keeps holding does not stop it for longer than
// gitLockWait (the control: the same restore with no lock is immediate).
func TestRestoreConfigWaitsForGitLock(t *testing.T) {
	setup := func(t *testing.T) (*Snapshot, string, fileState, []byte) {
		s, path := lockTestDir(t)
		safe := []byte("[core]\n\trepositoryformatversion = 0\n")
		want := fileState{Type: "file", Perm: 0o644, Hash: s.mustObject(t, safe), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
		return s, path, want, safe
	}
	t.Run("fresh lock: waits for git", func(t *testing.T) {
		s, path, want, safe := setup(t)
		lock := path + ".lock"
		os.WriteFile(lock, nil, 0o644)
		done := make(chan error, 1)
		go func() { done <- s.restore(path, want) }()
		time.Sleep(100 * time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("restore returned (%v) while git held config.lock", err)
		default:
		}
		if got, _ := os.ReadFile(path); !bytes.Contains(got, []byte("fsmonitor")) {
			t.Fatalf("the config was replaced while git held its lock:\n%s", got)
		}
		os.Remove(lock) // git is done (or gave up)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, safe) {
			t.Fatalf("restored config:\n%s\nwant\n%s", got, safe)
		}
		if _, err := os.Lstat(lock); !os.IsNotExist(err) {
			t.Fatalf("config.lock left behind: %v", err)
		}
	})
	t.Run("a lock held for good stops nothing", func(t *testing.T) {
		s, path, want, safe := setup(t)
		saved := gitLockWait
		gitLockWait = 50 * time.Millisecond
		defer func() { gitLockWait = saved }()
		lock := path + ".lock"
		os.WriteFile(lock, nil, 0o644)
		start := time.Now()
		if err := s.restore(path, want); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < gitLockWait || d > gitLockStale {
			t.Fatalf("restore took %v past a held lock, want about %v", d, gitLockWait)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, safe) {
			t.Fatalf("restored config:\n%s\nwant\n%s", got, safe)
		}
		if _, err := os.Lstat(lock); err != nil {
			t.Fatalf("the holder's lock was removed: %v", err)
		}
	})
	t.Run("control: no lock, no wait", func(t *testing.T) {
		s, path, want, safe := setup(t)
		start := time.Now()
		if err := s.restore(path, want); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > gitLockWait/2 {
			t.Fatalf("restore with no lock took %v", d)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, safe) {
			t.Fatalf("restored config:\n%s\nwant\n%s", got, safe)
		}
	})
}

// mustObject stores data in the snapshot's objects and returns its hash.
func (s *Snapshot) mustObject(t *testing.T, data []byte) string {
	t.Helper()
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	os.MkdirAll(filepath.Join(s.StateDir, "objects"), 0o700)
	if err := s.writeObject(hash, data); err != nil {
		t.Fatal(err)
	}
	return hash
}

// TestWatchFindsGitDirMadeAfterItsDirectory: git clone --separate-git-dir makes modules/NAME
// first and its HEAD later. A check between the two finds no git dir; the watch must still see
// the HEAD arrive and neutralise the git dir then, not at the next tick of WatchInterval (an
// hour here). Control: the same git dir written in one go is neutralised too.
func TestWatchFindsGitDirMadeAfterItsDirectory(t *testing.T) {
	for _, late := range []bool{true, false} {
		name := map[bool]string{true: "HEAD after a check", false: "control: written in one go"}[late]
		t.Run(name, func(t *testing.T) {
			work := filepath.Join(fixture(t), "work")
			watchOnEvents(t, work)
			gd := filepath.Join(work, ".git/modules/late")
			fill := func() {
				os.MkdirAll(filepath.Join(gd, "hooks"), 0o755)
				os.WriteFile(filepath.Join(gd, "hooks/post-checkout"), []byte("#!/bin/sh\n"), 0o755)
				os.WriteFile(filepath.Join(gd, "config"), []byte("[core]\n\tfsmonitor = sh\n"), 0o644)
				os.WriteFile(filepath.Join(gd, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
			}
			if late {
				os.Mkdir(gd, 0o755)
				time.Sleep(300 * time.Millisecond) // the check of the mkdir's event has run
			}
			fill()
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				cfg, _ := os.ReadFile(filepath.Join(gd, "config"))
				if !bytes.Contains(cfg, []byte("fsmonitor")) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if cfg, _ := os.ReadFile(filepath.Join(gd, "config")); bytes.Contains(cfg, []byte("fsmonitor")) {
				t.Fatalf("5 s after its HEAD was written the new git dir's config still sets fsmonitor:\n%s", cfg)
			}
			if _, err := os.Lstat(filepath.Join(gd, "hooks/post-checkout")); err == nil {
				t.Fatal("the new git dir's hook is still there")
			}
		})
	}
}
