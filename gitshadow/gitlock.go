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
// O_CREAT|O_EXCL, reads "config" (it parses the file by name for the offsets of what it
// changes, then copies from the descriptor it opened), writes the result into the lock and
// renames the lock over "config". A rewrite of ours renamed over "config" between git's two
// reads handed git a garbled copy to commit ("bad config line 8" from the box's own git
// clone), and one landing after git's read was lost under git's rename.
//
// So the host's rewrite of a config file (the neutraliser's, the restore's) is made whole under
// a name of its own first and renamed over the file only while git holds no lock on it, and
// only over the file it was based on. The host does not take git's lock itself: a git that
// finds the lock taken fails at once ("could not lock config file") instead of waiting, and a
// host that takes the lock the moment git releases it meets git's next write of the same
// command (measured: 8 of 120 runs of TestWatchNeutralisesNewSubmodule failed that way, against
// 3 of 120 garbled configs before). What is left is the microseconds between the host's look
// at the lock and its rename; the watcher also lets a burst of the box's git writes end before
// it acts (watch.go), and a config git garbles or commits over ours is restored at the next
// check, since every check compares the file with its record.
//
// A box can hold a lock for good (a stale "config.lock" of its own) to keep the host from
// writing: a lock older than gitLockStale is not waited for, a fresh one only up to
// gitLockWait; then the host renames regardless.
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

// waitGitIdle waits while git holds a fresh lock on path (path.lock exists), at most
// gitLockWait; a lock older than gitLockStale is not git's (git holds its locks for
// milliseconds) and is not waited for.
func waitGitIdle(path string) {
	lock := path + ".lock"
	deadline := time.Now().Add(gitLockWait)
	for {
		fi, err := os.Lstat(lock)
		if err != nil || time.Since(fi.ModTime()) > gitLockStale || time.Now().After(deadline) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// renameWhenGitIdle renames tmp over path once git holds no lock on it (waitGitIdle). When
// unchanged is given and reports that path is no longer the file the caller based tmp on (git
// committed a rewrite meanwhile), nothing is renamed and errGitRaced is returned: the caller
// reads again.
func renameWhenGitIdle(tmp, path string, unchanged func() bool) error {
	waitGitIdle(path)
	if unchanged != nil && !unchanged() {
		return errGitRaced
	}
	return os.Rename(tmp, path)
}

// errGitRaced says that git rewrote a file between the host's read and its rename.
var errGitRaced = errors.New("rewritten by git meanwhile")

// sameFile reports whether path is still the file fi was taken of: the same inode, size and
// modification time (a rename over it or a write into it changes one of them).
func sameFile(path string, fi fs.FileInfo) bool {
	now, err := os.Lstat(path)
	return err == nil && fi != nil && os.SameFile(fi, now) && now.Size() == fi.Size() && now.ModTime().Equal(fi.ModTime())
}

// writeTemp writes data with exactly perm into a new file beside path, synced, and returns its
// name.
func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".gitshadow-*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return name, nil
}
