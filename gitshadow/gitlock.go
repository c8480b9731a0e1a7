package gitshadow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Git rewrites a config file under git's lockfile protocol: it creates "config.lock" with
// O_CREAT|O_EXCL, reads "config" (parsing it by name for the offsets of what it changes, then
// copying from the file it opened), writes the result into the lock and renames the lock over
// "config". A rewrite of ours renamed over "config" between git's two reads hands git a garbled
// copy to commit ("bad config line 8"), and one landing after git's read is lost under git's
// rename. So the host writes the config files it neutralises and restores the way git does:
// through the lock, taken before it reads.
//
// A box can hold a lock forever (a stale "config.lock" of its own) to keep the host from
// writing: a lock older than gitLockStale is not waited for, and a fresh one only up to
// gitLockWait; then the host writes under a name of its own as before. Nothing is lost that
// way: the file is checked against its record at every check, so a write git commits over
// ours afterwards is restored at the next one.
var (
	gitLockWait  = 500 * time.Millisecond
	gitLockStale = time.Second
)

// gitLocked reports whether git rewrites the file at path under path.lock.
func gitLocked(path string) bool {
	switch filepath.Base(path) {
	case "config", "config.worktree":
		return true
	}
	return false
}

// gitLock is git's lock on one file, held by the host.
type gitLock struct {
	path string   // the locked file
	f    *os.File // path.lock, created by us
}

// lockGitFile takes git's lock on path: it creates path.lock exclusively (never following a
// link there), waiting while a fresh lock of git's is held. It returns nil, nil when the lock
// is held by someone else for longer than it waits, or is stale: the caller then writes without
// it.
func lockGitFile(path string) (*gitLock, error) {
	lock := path + ".lock"
	deadline := time.Now().Add(gitLockWait)
	for {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // O_EXCL: a link there is never followed
		if err == nil {
			return &gitLock{path: path, f: f}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		fi, serr := os.Lstat(lock)
		if serr == nil && time.Since(fi.ModTime()) > gitLockStale {
			return nil, nil // not git's: git holds its locks for milliseconds
		}
		if time.Now().After(deadline) {
			return nil, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// commit writes data with exactly perm into the lock and renames it over the locked file,
// which releases the lock as git's commit does.
func (l *gitLock) commit(data []byte, perm fs.FileMode, owner *fileState) error {
	name := l.f.Name()
	fail := func(err error) error {
		l.f.Close()
		os.Remove(name)
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if _, err := l.f.Write(data); err != nil {
		return fail(err)
	}
	if err := l.f.Chmod(perm); err != nil {
		return fail(err)
	}
	if owner != nil {
		if err := chownIfRoot(name, *owner); err != nil {
			return fail(err)
		}
	}
	if err := l.f.Sync(); err != nil {
		return fail(err)
	}
	if err := l.f.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if err := os.Rename(name, l.path); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	return nil
}

// release gives the lock up without writing.
func (l *gitLock) release() {
	l.f.Close()
	os.Remove(l.f.Name())
}
