package gitshadow

// Reading the box's files as data, cheaply: discovery of a repository with 1,000 submodules makes
// some 20,000 file system calls, and their count, not parsing, is what it costs (issue #24). The
// rules:
//   - Only a regular file is read: it is lstat'ed first, so a FIFO, socket, device or symlink the
//     box planted is never opened, and opened with O_NOFOLLOW|O_NONBLOCK, so one swapped in
//     between the two calls is refused (fstat) without blocking or following it.
//   - A file larger than maxConfigSize is refused, also if it grows after the lstat.
//   - Files are read with the raw system calls: os.Open spends five more on each regular file
//     (four fcntl and an epoll_ctl that fails), which is a quarter of discovery's time.
//   - A git dir is listed once (getdents), and its entries' types stand in for an lstat of
//     each of the paths the plan shadows in it; a git dir that cannot be listed is lstat'ed
//     path by path as before.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// readSmall reads a regular file of at most maxConfigSize bytes, refusing anything else.
func readSmall(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	if fi.Size() > maxConfigSize {
		return nil, fmt.Errorf("read %s: %d bytes, more than %d", path, fi.Size(), maxConfigSize)
	}
	return readRegular(path)
}

// readRegular is readSmall for a path a listing or an lstat has just shown to be a regular file:
// it is not lstat'ed again; the fstat of what was opened refuses anything else.
func readRegular(path string) ([]byte, error) {
	fd, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	if st.Size > maxConfigSize {
		return nil, fmt.Errorf("read %s: %d bytes, more than %d", path, st.Size, maxConfigSize)
	}
	return readFD(fd, path, int(st.Size))
}

// openNoFollow opens path for reading without following a final symlink or blocking on a FIFO.
func openNoFollow(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.ELOOP {
			return -1, fmt.Errorf("read %s: not a regular file", path)
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// fstat is syscall.Fstat, retried on EINTR.
func fstat(fd int, st *syscall.Stat_t) error {
	for {
		if err := syscall.Fstat(fd, st); err != syscall.EINTR {
			return err
		}
	}
}

// readFD reads fd to its end, size being what fstat said, refusing more than maxConfigSize.
func readFD(fd int, path string, size int) ([]byte, error) {
	buf := make([]byte, 0, min(size, maxConfigSize)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grew since the fstat: make room
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR || err == syscall.EAGAIN:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) > maxConfigSize {
			return nil, fmt.Errorf("read %s: more than %d bytes", path, maxConfigSize)
		}
	}
}

// listing is the type of each entry of one directory, by name.
type listing map[string]fs.FileMode

// listDir lists dir without following it if it is a symlink, or returns nil when it cannot.
func listDir(dir string) listing {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil
	}
	l := make(listing, len(ents))
	for _, e := range ents {
		l[e.Name()] = e.Type()
	}
	return l
}

// mayHave reports whether name may be in the directory: it is listed, or l is nil (the
// directory could not be listed, so every path in it is looked at on its own).
func (l listing) mayHave(name string) bool {
	if l == nil {
		return true
	}
	_, ok := l[name]
	return ok
}

// shadowIn is shadow for the entry name of dir, from its listing l when there is one.
func shadowIn(l listing, dir, name string, kind Kind, isDir bool) Shadow {
	path := filepath.Join(dir, name)
	if l == nil {
		return shadow(path, kind, isDir)
	}
	if !l.has(name, isDir) {
		return Shadow{Path: path, Kind: Watched, Dir: isDir}
	}
	return Shadow{Path: path, Kind: kind, Dir: isDir, Exists: true}
}

// has reports whether l holds name as a plain directory (dir) or a regular file, which is what
// shadow's lstat checks.
func (l listing) has(name string, dir bool) bool {
	t, ok := l[name]
	if !ok {
		return false
	}
	if dir {
		return t == fs.ModeDir
	}
	return t == 0
}
