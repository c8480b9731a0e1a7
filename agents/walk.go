package agents

// This file walks a package or a store entry on disk. Rules:
//   - the walk goes through descriptors only (nofollow.go): a directory is entered by openat
//     with O_NOFOLLOW, so a link to a directory is listed as a link and never entered;
//   - only directories, regular files and links may be there: a FIFO, socket or device is an
//     error naming its path;
//   - a regular file is hashed (full) through a descriptor opened O_NOFOLLOW|O_NONBLOCK whose
//     fstat must show the same inode the listing saw;
//   - a regular file with more hard links than names in the tree shares its inode with a file
//     outside: an error, since a write there would change the store;
//   - the top directory is listed as "." with its mode, so a chmod of it is a difference too.

import (
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// walker is one walk's state.
type walker struct {
	full   bool
	skip   string // a name at the top not to list (the manifest)
	out    []manifestEntry
	inodes map[[2]uint64]*inodeNames
}

// inodeNames is how many links an inode has and the names the walk found for it.
type inodeNames struct {
	nlink uint64
	names []string
}

// scanFD lists the tree under the open directory fd ("." first), skipping skip at the top.
func scanFD(fd int, full bool, skip string) ([]manifestEntry, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	w := &walker{full: full, skip: skip, inodes: map[[2]uint64]*inodeNames{}}
	w.out = append(w.out, manifestEntry{Path: ".", Mode: fileMode(&st)})
	if err := w.dir(fd, "."); err != nil {
		return nil, err
	}
	return w.out, w.hardLinks()
}

// dir lists the open directory fd, found at rel, and everything below it.
func (w *walker) dir(fd int, rel string) error {
	dup, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), rel)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("list %q: %w", rel, err)
	}
	sort.Strings(names)
	for _, name := range names {
		if rel == "." && name == w.skip {
			continue
		}
		if err := w.one(fd, rel, name); err != nil {
			return err
		}
	}
	return nil
}

// one lists name in the open directory fd (found at rel).
func (w *walker) one(fd int, rel, name string) error {
	p := joinRel(rel, name)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("look at %q: %w", p, err)
	}
	e := manifestEntry{Path: p, Mode: fileMode(&st)}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		w.out = append(w.out, e)
		child, err := unix.Openat(fd, name, openDirFlags, 0)
		if err != nil {
			return explainOpen(fd, name, p, err, "directory")
		}
		defer unix.Close(child)
		return w.dir(child, p)
	case unix.S_IFREG:
		e.Size, e.MTime = st.Size, st.Mtim.Nano()
		if w.full {
			var err error
			if e.SHA512, err = hashAt(fd, name, p, &st); err != nil {
				return err
			}
		}
		key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
		if w.inodes[key] == nil {
			w.inodes[key] = &inodeNames{nlink: uint64(st.Nlink)}
		}
		w.inodes[key].names = append(w.inodes[key].names, p)
	case unix.S_IFLNK:
		var err error
		if e.Link, err = readlinkAt(fd, name); err != nil {
			return fmt.Errorf("read link %q: %w", p, err)
		}
	default:
		return fmt.Errorf("%q is a %s; only directories, regular files and links may be there: %w", p, kindOf(&st), errNotPlain)
	}
	w.out = append(w.out, e)
	return nil
}

// hashAt returns the hex sha512 of the regular file name in the open directory fd, which must
// still be the inode lstat saw.
func hashAt(fd int, name, shown string, want *unix.Stat_t) (string, error) {
	f, st, err := openRegularAt(fd, name, shown)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st.Ino != want.Ino || st.Dev != want.Dev {
		return "", fmt.Errorf("%q was replaced while it was read: %w", shown, errNotPlain)
	}
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %q: %w", shown, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hardLinks refuses a file whose inode has links outside the walked tree.
func (w *walker) hardLinks() error {
	var worst *inodeNames // the one with the first name, so the error is the same every time
	for _, in := range w.inodes {
		if in.nlink > uint64(len(in.names)) && (worst == nil || in.names[0] < worst.names[0]) {
			worst = in
		}
	}
	if worst == nil {
		return nil
	}
	return fmt.Errorf("%q has %d hard links but only %d in this tree: it shares its data with a file outside: %w",
		worst.names[0], worst.nlink, len(worst.names), errNotPlain)
}
