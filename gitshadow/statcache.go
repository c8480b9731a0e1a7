package gitshadow

import (
	"io/fs"
	"os"
	"syscall"
	"time"
)

// The stat cache spares every check of a session from reading and hashing each snapshotted
// file again. The snapshot keeps, per file, what lstat said just before the content was read and
// hashed, and when. A later check trusts the recorded hash without reading the file only when
// size, mtime, ctime, inode, device, mode and owner are all equal AND the recorded ctime is more
// than racyWindow older than the moment it was recorded. The box can put an old mtime back over
// the mount, but not the host's ctime: any write, chmod, chown, utimes, link or rename of the
// inode sets its ctime to the host's now, which differs from a ctime that was already old when it
// was recorded. A file whose ctime was recent when recorded ("racy", as git calls it) may have
// been written again in the same clock tick, so it is always read and hashed.
//
// Snapshotted directories (hooks/, info/) are cached the same way: a directory listed with
// nothing new and no subdirectory in it is not listed again while its stat is unchanged and
// old, since adding, removing or renaming an entry in it sets its ctime (and mtime). A directory
// with subdirectories is always walked: an entry added down there changes only the subdirectory.
//
// The cache lives in the snapshot record under $CORRAL_HOME, out of the box's reach.

// racyWindow is how much older than its record a ctime must be for the stat cache to trust it;
// it covers coarse file system timestamps and the kernel's coarse clock.
const racyWindow = 2 * time.Second

// now is the host clock the stat cache stamps its records with; tests move it.
var now = time.Now

// statKey is what lstat says about a regular file.
type statKey struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"` // ns
	Ctime int64  `json:"ctime"` // ns
	Ino   uint64 `json:"ino"`
	Dev   uint64 `json:"dev"`
	Mode  uint32 `json:"mode"`
	UID   uint32 `json:"uid"`
	GID   uint32 `json:"gid"`
}

// statEntry is one record of the stat cache: the file had Hash when lstat said statKey, At.
type statEntry struct {
	statKey
	Hash string `json:"hash"`
	At   int64  `json:"at"` // ns, host clock taken before the lstat
}

// keyOf returns the stat cache key of fi, and false when fi carries no raw stat.
func keyOf(fi fs.FileInfo) (statKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statKey{}, false
	}
	return keyOfStat(st), true
}

// trusts reports whether e vouches for a file lstat now describes as k: the keys are equal and
// e's ctime is more than racyWindow older than e was recorded.
func (e statEntry) trusts(k statKey) bool {
	return e.Hash != "" && e.statKey == k && e.Ctime < e.At-racyWindow.Nanoseconds()
}

// statFile reads the state of path for the checks of a session: when the stat cache vouches for the
// regular file at path holding want's hash, it returns its state from lstat alone, without
// reading it (read is false). Otherwise it reads and hashes the file and records what it read.
func (s *Snapshot) statFile(path string, want fileState) (st fileState, read bool, err error) {
	at := now().UnixNano()
	if e, ok := s.Stat[path]; ok && want.Type == "file" && e.Hash == want.Hash {
		fi, err := os.Lstat(path)
		if err == nil && fi.Mode().IsRegular() {
			if k, ok := keyOf(fi); ok && e.trusts(k) {
				return fileState{Type: "file", Perm: fi.Mode().Perm(), Hash: e.Hash, UID: k.UID, GID: k.GID}, false, nil
			}
		}
	}
	st, _, err = s.readStateAt(path, at)
	return st, true, err
}

// readStateAt is readStateInfo that also records a regular file's stat cache entry: what lstat
// said before the content was read, stamped at (taken before that lstat). A write after the
// lstat changes the ctime, so the entry never vouches for content it was not made with.
func (s *Snapshot) readStateAt(path string, at int64) (fileState, []byte, error) {
	st, data, fi, err := readStateInfo(path)
	if err != nil || st.Type != "file" {
		delete(s.Stat, path)
		return st, data, err
	}
	k, ok := keyOf(fi)
	if !ok || int64(len(data)) != k.Size {
		delete(s.Stat, path) // it changed while it was read: the next check reads it again
		return st, data, nil
	}
	e := statEntry{statKey: k, Hash: st.Hash, At: at}
	if old, had := s.Stat[path]; !had || old.statKey != k || old.Hash != e.Hash || !old.trusts(k) {
		s.statDirty = s.statDirty || e.trusts(k)
	}
	if s.Stat == nil {
		s.Stat = map[string]statEntry{}
	}
	s.Stat[path] = e
	return st, data, nil
}

// listedFlat is the "hash" of a directory's stat cache entry: listed, nothing new in it, no
// subdirectory.
const listedFlat = "listed-flat"

// treeKey returns the stat cache key of a snapshotted directory, and false when it is not a
// directory now (checkFile deals with that).
func (s *Snapshot) treeKey(dir string) (statKey, bool) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return statKey{}, false
	}
	return keyOf(fi)
}

// recordDir keeps a directory's stat cache entry.
func (s *Snapshot) recordDir(dir string, e statEntry) {
	old, had := s.DirStat[dir]
	if had && old.statKey == e.statKey && old.trusts(old.statKey) {
		return
	}
	if s.DirStat == nil {
		s.DirStat = map[string]statEntry{}
	}
	s.DirStat[dir] = e
	s.statDirty = s.statDirty || e.trusts(e.statKey)
}
