package agents

// This file is how the host opens what is in a package it extracted and in the store it keeps.
// Rules:
//   - only the directory the caller names (the store, a staging directory, a package's
//     destination, all made by git corral) is opened by path; below it every element is opened
//     on its own, relative to its parent's descriptor, with O_NOFOLLOW: no symbolic link is
//     ever followed, not even one that stays inside;
//   - a file is read only if it is regular: it is opened O_NONBLOCK (a FIFO cannot hang the
//     open), its type is checked with fstat on the descriptor actually read (not on the name),
//     and what is read is capped;
//   - a directory is listed from its descriptor and each name in it is looked at with fstatat
//     (AT_SYMLINK_NOFOLLOW), never through a path string.
// The same code runs on Linux and macOS hosts: openat with O_NOFOLLOW one element at a time
// needs neither openat2 nor os.Root (which follows links that stay inside its root).

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	openDirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	openFileFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
)

// errNotPlain: a path element is a link, or not the kind of file asked for.
var errNotPlain = errors.New("refused")

// openTop opens dir, a directory git corral made and names by path, for the calls below.
func openTop(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// openDirBeneath opens rel ("." or slash-separated, no "..") under the open directory parent
// one element at a time; an element that is a link or not a directory is refused with
// errNotPlain, a missing one with fs.ErrNotExist.
func openDirBeneath(parent int, rel string) (int, error) {
	fd, err := unix.Openat(parent, ".", openDirFlags, 0)
	if err != nil {
		return -1, err
	}
	if rel == "." || rel == "" {
		return fd, nil
	}
	done := ""
	for _, el := range strings.Split(rel, "/") {
		if el == "" || el == "." || el == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("open %q: element %q: %w", rel, el, errNotPlain)
		}
		done = joinRel(done, el)
		next, err := unix.Openat(fd, el, openDirFlags, 0)
		if err != nil {
			err = explainOpen(fd, el, done, err, "directory")
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// openRegularAt opens the regular file name (one element) in the open directory dir, refusing
// a link, a FIFO, a device, a socket or a directory; it returns the file and its fstat.
func openRegularAt(dir int, name, shown string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat(dir, name, openFileFlags, 0)
	if err != nil {
		return nil, st, explainOpen(dir, name, shown, err, "regular file")
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, st, &fs.PathError{Op: "fstat", Path: shown, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, st, fmt.Errorf("%q is a %s, not a regular file: %w", shown, kindOf(&st), errNotPlain)
	}
	return os.NewFile(uintptr(fd), shown), st, nil
}

// readRegularBeneath reads the regular file rel under the open directory dir, at most max
// bytes, never through a link.
func readRegularBeneath(dir int, rel string, max int64) ([]byte, error) {
	parent, name := ".", rel
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		parent, name = rel[:i], rel[i+1:]
	}
	pfd, err := openDirBeneath(dir, parent)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	f, _, err := openRegularAt(pfd, name, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", rel, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%q holds more than %d bytes", rel, max)
	}
	return data, nil
}

// explainOpen turns a failed open of name in dir into an error saying what is there instead.
func explainOpen(dir int, name, shown string, err error, want string) error {
	var st unix.Stat_t
	if errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "open", Path: shown, Err: fs.ErrNotExist}
	}
	if serr := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && (st.Mode&unix.S_IFMT == unix.S_IFLNK || want == "directory") {
		return fmt.Errorf("%q is a %s, not a %s: %w", shown, kindOf(&st), want, errNotPlain)
	}
	return &fs.PathError{Op: "open", Path: shown, Err: err}
}

// kindOf names a file's type for error messages.
func kindOf(st *unix.Stat_t) string {
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return "file of unknown type"
}

// fileMode is fs.FileMode of st, as os.Lstat reports it.
func fileMode(st *unix.Stat_t) fs.FileMode {
	raw := uint32(st.Mode)
	m := fs.FileMode(raw & 0o777)
	switch raw & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if raw&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if raw&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if raw&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// readlinkAt returns the target of the link name in the open directory dir.
func readlinkAt(dir int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	if n == len(buf) {
		return "", fmt.Errorf("readlink %q: target longer than %d bytes", name, len(buf))
	}
	return string(buf[:n]), nil
}

// joinRel joins slash-separated relative paths where "" and "." mean the top.
func joinRel(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return dir + "/" + name
}
