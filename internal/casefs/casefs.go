//go:build linux

package casefs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Server is one mounted case-insensitive view of a backing directory.
type Server struct {
	// Backing is the directory served; Mountpoint is where it is mounted.
	Backing, Mountpoint string

	server *fuse.Server
}

// Mount serves backing (an existing directory) case-insensitively at mountpoint (an existing
// empty directory) until Unmount. Entries are never cached by the kernel (zero entry, attribute
// and negative timeouts), so every lookup is folded afresh.
func Mount(ctx context.Context, backing, mountpoint string) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(backing)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs) // the root is stat'ed without following links
	}
	if err != nil {
		return nil, fmt.Errorf("casefs: mount %q: %w", backing, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); err != nil {
		return nil, fmt.Errorf("casefs: mount %q: %w", backing, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, fmt.Errorf("casefs: mount %q: not a directory", backing)
	}
	root := &node{fs: &fileSystem{backing: abs, dev: uint64(st.Dev)}}
	var zero time.Duration
	srv, err := fs.Mount(mountpoint, root, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			FsName: "casefs", Name: "casefs", DirectMount: true, AllowOther: true,
			Options: []string{"default_permissions"},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("casefs: mount %q on %q: %w", backing, mountpoint, err)
	}
	return &Server{Backing: abs, Mountpoint: mountpoint, server: srv}, nil
}

// unmountTries is how many times Unmount tries a clean unmount, 100 ms apart.
var unmountTries = 20

// Unmount unmounts the filesystem and waits for the server to stop. A busy mount is retried for
// a few seconds (a process may still be leaving it); if it stays busy, the FUSE connection is
// aborted (MNT_FORCE: every pending and later request fails with ENOTCONN) and the mount
// detached, and an error is returned. Left mounted, a file still open on it would hang its
// holder for good once this process, the server, stops answering; that includes this very
// process as it exits.
func (s *Server) Unmount() error {
	var err error
	for range unmountTries {
		if err = s.server.Unmount(); err == nil {
			s.server.Wait()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	ferr := syscall.Unmount(s.Mountpoint, syscall.MNT_FORCE)
	if ferr != nil {
		ferr = syscall.Unmount(s.Mountpoint, syscall.MNT_DETACH)
	}
	return fmt.Errorf("casefs: unmount %q: %w (aborted and detached: %v)", s.Mountpoint, err, ferr)
}

// fileSystem is what every node of one mount shares.
type fileSystem struct {
	backing string
	dev     uint64
}

// resolve returns the backing spelling of name in the backing directory dir: name itself when it
// exists, else the entry that folds alike, else name (a new entry keeps its spelling).
func resolve(dir, name string) string {
	if _, err := os.Lstat(filepath.Join(dir, name)); err == nil || !errors.Is(err, os.ErrNotExist) {
		return name
	}
	f, err := os.Open(dir)
	if err != nil {
		return name
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	sort.Strings(names)
	key := Fold(name)
	for _, n := range names {
		if Fold(n) == key {
			return n
		}
	}
	return name
}

// backingPath maps a path relative to the mount (in any spelling) to the backing path.
func (f *fileSystem) backingPath(rel string) string {
	p := f.backing
	if rel == "" {
		return p
	}
	for _, comp := range strings.Split(rel, "/") {
		p = filepath.Join(p, resolve(p, comp))
	}
	return p
}

// stableAttr identifies a backing file: the same file under every spelling gets the same FUSE
// node, hence the same kernel inode. The device is mixed in as go-fuse's loopback does.
func (f *fileSystem) stableAttr(st *syscall.Stat_t) fs.StableAttr {
	swapped := (uint64(st.Dev) << 32) | (uint64(st.Dev) >> 32)
	rootDev := (f.dev << 32) | (f.dev >> 32)
	return fs.StableAttr{Mode: st.Mode, Ino: (swapped ^ rootDev) ^ st.Ino}
}
