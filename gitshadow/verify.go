package gitshadow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Change is one difference the host found in git metadata, and what it did about it.
type Change struct {
	// Path is the absolute path that changed.
	Path string `json:"path"`
	// What is "modified", "removed", "added", "replaced" (a pinned dir swapped for another),
	// or "neutralised" (a git dir that appeared during the session).
	What string `json:"what"`
	// Restored is true when the snapshot's state is back (or the new git dir was neutralised).
	Restored bool `json:"restored"`
	// Quarantine is where the box's version was kept for review, if there was one.
	Quarantine string `json:"quarantine,omitempty"`
	// Detail says more, for a report.
	Detail string `json:"detail,omitempty"`
}

// ErrNotRestored is returned by Verify when at least one change could not be undone; the
// checkout must not be used by the host's git until it is repaired.
var ErrNotRestored = errors.New("git metadata changed and could not be restored")

// Verify compares every snapshotted path with its record, restores each change (keeping the
// box's version in the quarantine), neutralises git dirs that appeared during the session, and
// returns what it found. The error wraps ErrNotRestored when anything could not be undone.
func Verify(ctx context.Context, s *Snapshot) ([]Change, error) {
	return s.check(ctx, true)
}

// check is Verify; full also scans the work tree for planted .git entries, which the watcher
// does less often than the cheap checks.
func (s *Snapshot) check(ctx context.Context, full bool) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changes, err := s.checkKnown(ctx)
	if err != nil {
		return changes, err
	}
	add := func(c ...Change) { changes = append(changes, c...) }
	known := len(s.GitDirs)
	add(s.newGitDirs(ctx)...)
	if full {
		add(s.scanWorkTree(ctx)...)
	}
	if len(s.GitDirs) > known {
		// Git dirs were adopted: undo at once what the box wrote into them while they were
		// being neutralised (see adopt), rather than wait for an event that may never come.
		again, err := s.checkKnown(ctx)
		add(again...)
		if err != nil {
			return changes, err
		}
	}
	switch {
	case len(changes) > 0:
		if err := s.save(); err != nil { // adopted git dirs must survive a crash too
			return changes, fmt.Errorf("save git metadata snapshot: %w", err)
		}
	case s.statDirty:
		// Only the stat cache learnt something; losing it costs the next session a read.
		s.saveRecord()
	}
	var bad []string
	for _, c := range changes {
		if !c.Restored {
			bad = append(bad, c.Path)
		}
	}
	if len(bad) > 0 {
		return changes, fmt.Errorf("%w: %s", ErrNotRestored, strings.Join(bad, ", "))
	}
	return changes, nil
}

// checkKnown checks the pins, files and trees of the snapshot, restoring what changed.
func (s *Snapshot) checkKnown(ctx context.Context) ([]Change, error) {
	changes := s.forgetVanished()
	for _, p := range sortedKeys(s.Pins) {
		if c, ok := s.checkPin(p); ok {
			changes = append(changes, c)
		}
	}
	for _, p := range sortedKeys(s.Files) {
		if err := ctx.Err(); err != nil {
			return changes, err
		}
		if c, ok := s.checkFile(p); ok {
			changes = append(changes, c)
		}
	}
	for _, t := range sortedKeys(s.Trees) {
		changes = append(changes, s.checkTree(t)...)
	}
	return changes, nil
}

// checkPin makes sure path is still the directory that was pinned. When it was renamed and
// replaced, the impostor is quarantined and the original, found by its inode next to it, is
// moved back.
func (s *Snapshot) checkPin(path string) (Change, bool) {
	want := s.Pins[path]
	if got, ok := pinOf(path); ok && got == want {
		return Change{}, false
	}
	c := Change{Path: path, What: "replaced"}
	orig := findByInode(filepath.Dir(path), want)
	if orig == "" {
		c.Detail = "the original directory is gone; restore it from a backup or re-clone"
		if _, err := os.Lstat(path); err == nil {
			c.Quarantine, _ = s.quarantine(path)
		}
		return c, true
	}
	if _, err := os.Lstat(path); err == nil {
		q, err := s.quarantine(path)
		if err != nil {
			c.Detail = err.Error()
			return c, true
		}
		c.Quarantine = q
	}
	if err := os.Rename(orig, path); err != nil {
		c.Detail = fmt.Sprintf("move %s back: %v", orig, err)
		return c, true
	}
	c.Restored = true
	c.Detail = "moved back from " + orig
	return c, true
}

// findByInode returns the entry of dir (or of the top level of a subdirectory one level down)
// that is the directory pin identifies.
func findByInode(dir string, pin pinState) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if st, ok := pinOf(p); ok && st == pin {
			return p
		}
	}
	return ""
}

// checkFile restores path when it differs from its record.
func (s *Snapshot) checkFile(path string) (Change, bool) {
	want := s.Files[path]
	got, _, err := s.statFile(path, want)
	if err == nil && sameState(got, want) {
		return Change{}, false
	}
	if accept, pending := s.lateWorktreeFile(path, want); accept || pending {
		if accept {
			s.recordFile(path)
		}
		return Change{}, false
	}
	c := Change{Path: path, What: "modified"}
	switch {
	case want.Type == "absent":
		c.What = "added"
	case got.Type == "absent":
		c.What = "removed"
	}
	if want.Type == "dir" && got.Type == "dir" {
		if err := os.Chmod(path, want.Perm); err != nil {
			c.Detail = err.Error()
			return c, true
		}
		c.Restored = true
		return c, true
	}
	err = nil
	switch {
	case replaceable(got.Type) && replaceable(want.Type):
		// Keep a copy and replace in one rename: git reading the file meanwhile sees the
		// old content or the restored one, never a missing or half-written file.
		c.Quarantine, err = s.quarantineCopy(path)
	case got.Type != "absent":
		c.Quarantine, err = s.quarantine(path)
	}
	if err == nil {
		err = s.restore(path, want)
	}
	if err != nil {
		c.Detail = err.Error()
		return c, true
	}
	c.Restored = true
	return c, true
}

// replaceable reports whether a path of this type can be replaced by a rename over it.
func replaceable(typ string) bool { return typ == "file" || typ == "symlink" }

// sameState compares two states, ignoring a directory's content (trees check that).
func sameState(a, b fileState) bool {
	return a == b
}

// restore puts the recorded state back at path, with its owner. A file or symlink is made
// under a temporary name in the same directory and renamed over path, so it appears whole.
func (s *Snapshot) restore(path string, want fileState) error {
	switch want.Type {
	case "absent":
		return nil
	case "dir":
		if err := os.Mkdir(path, want.Perm); err != nil {
			return fmt.Errorf("restore %s: %w", path, err)
		}
		if err := os.Chmod(path, want.Perm); err != nil { // Mkdir's mode is cut by the umask
			return fmt.Errorf("restore %s: %w", path, err)
		}
		return chownIfRoot(path, want)
	case "symlink", "file":
		tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".gitshadow-restore-%d", os.Getpid()))
		os.Remove(tmp)
		if err := s.create(tmp, want); err != nil {
			os.Remove(tmp)
			return err
		}
		if err := chownIfRoot(tmp, want); err != nil {
			os.Remove(tmp)
			return err
		}
		rename := os.Rename
		if want.Type == "file" && gitLocked(path) {
			rename = func(tmp, path string) error { return renameWhenGitIdle(tmp, path, nil) } // gitlock.go
		}
		if err := rename(tmp, path); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("restore %s: %w", path, err)
		}
		return nil
	}
	return fmt.Errorf("restore %s: cannot recreate a %s", path, want.Type)
}

// chownIfRoot gives path its recorded owner back; without privileges it can only be ours.
func chownIfRoot(path string, want fileState) error {
	if err := os.Lchown(path, int(want.UID), int(want.GID)); err != nil && !errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("restore owner of %s: %w", path, err)
	}
	return nil
}

// create makes a new file or symlink at path holding the recorded state.
func (s *Snapshot) create(path string, want fileState) error {
	if want.Type == "symlink" {
		return os.Symlink(want.Link, path)
	}
	data, err := os.ReadFile(filepath.Join(s.StateDir, "objects", want.Hash))
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	return writeExact(path, data, want.Perm)
}

// writeExact writes a new file with exactly perm (the umask does not apply).
func writeExact(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("restore %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("restore %s: %w", path, err)
	}
	return f.Close()
}

// checkTree quarantines every entry of a snapshotted directory that was not there before.
func (s *Snapshot) checkTree(dir string) []Change {
	var changes []Change
	var extra []string
	at := now().UnixNano()
	k, listable := s.treeKey(dir)
	if listable && s.DirStat[dir].trusts(k) {
		return nil
	}
	subdirs := false
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return nil
		}
		subdirs = subdirs || d.IsDir() // even an inert one: what is added inside it is not
		if inert(path) {
			return nil
		}
		if _, known := s.Files[path]; !known {
			extra = append(extra, path)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if listable && len(extra) == 0 && !subdirs {
		s.recordDir(dir, statEntry{statKey: k, Hash: listedFlat, At: at})
	}
	for _, p := range extra {
		c := Change{Path: p, What: "added"}
		q, err := s.quarantine(p)
		if err != nil {
			c.Detail = err.Error()
		} else {
			c.Quarantine, c.Restored = q, true
		}
		changes = append(changes, c)
	}
	return changes
}

// quarantine moves path (a file, symlink or directory) into the state dir, so the box's version
// is kept for review and nothing of it stays where git would read it.
func (s *Snapshot) quarantine(path string) (string, error) {
	s.seq++
	dst := filepath.Join(s.StateDir, "quarantine", fmt.Sprintf("%04d-%s", s.seq, safeName(filepath.Base(path))))
	if err := os.Rename(path, dst); err == nil {
		return dst, nil
	}
	if err := os.CopyFS(dst, os.DirFS(path)); err != nil {
		if err := copyOne(path, dst); err != nil {
			return "", fmt.Errorf("quarantine %s: %w", path, err)
		}
	}
	if err := os.RemoveAll(path); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", path, err)
	}
	return dst, nil
}

// copyOne copies a single file or symlink without following it.
func copyOne(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, []byte("symlink to "+link+"\n"), 0o600)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}

// safeName keeps a quarantine file name printable and short.
func safeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '/' {
			r = '_'
		}
		b.WriteRune(r)
		if b.Len() > 60 {
			break
		}
	}
	return b.String()
}
