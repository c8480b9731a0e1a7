//go:build linux

package casefs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is one file or directory of the mount. It keeps no path of its own: the kernel may know
// it under several spellings, so its backing path is worked out afresh from the node tree on
// every call, folding each component.
type node struct {
	fs.Inode
	fs *fileSystem
}

var (
	_ fs.NodeLookuper   = (*node)(nil)
	_ fs.NodeGetattrer  = (*node)(nil)
	_ fs.NodeSetattrer  = (*node)(nil)
	_ fs.NodeOpener     = (*node)(nil)
	_ fs.NodeCreater    = (*node)(nil)
	_ fs.NodeMkdirer    = (*node)(nil)
	_ fs.NodeUnlinker   = (*node)(nil)
	_ fs.NodeRmdirer    = (*node)(nil)
	_ fs.NodeRenamer    = (*node)(nil)
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeReadlinker = (*node)(nil)
	_ fs.NodeLinker     = (*node)(nil)
	_ fs.NodeReaddirer  = (*node)(nil)
	_ fs.NodeStatfser   = (*node)(nil)
)

// path is the node's backing path. An orphaned node (unlinked, or its parent forgotten) gets a
// placeholder path that does not exist.
func (n *node) path() string {
	return n.fs.backingPath(n.Path(n.Root()))
}

// child is the backing path of name in this directory.
func (n *node) child(name string) string {
	dir := n.path()
	return filepath.Join(dir, resolve(dir, name))
}

// newChild makes (or finds) the node of a backing file and fills out its attributes.
func (n *node) newChild(ctx context.Context, st *syscall.Stat_t, out *fuse.EntryOut) *fs.Inode {
	out.Attr.FromStat(st)
	return n.NewInode(ctx, &node{fs: n.fs}, n.fs.stableAttr(st))
}

// ownByCaller gives a new entry to the caller, as a kernel filesystem would, when the server
// runs as root.
func ownByCaller(ctx context.Context, path string) {
	if os.Getuid() != 0 {
		return
	}
	if c, ok := fuse.FromContext(ctx); ok {
		syscall.Lchown(path, int(c.Uid), int(c.Gid))
	}
}

// Lookup resolves name with case folding.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Lstat(n.child(name), &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.newChild(ctx, &st, out), 0
}

// Getattr stats the open file, or the backing path.
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if g, ok := f.(fs.FileGetattrer); ok {
		return g.Getattr(ctx, out)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(n.path(), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	return 0
}

// Open opens the backing file. O_APPEND is dropped because the kernel sends each write with
// its offset (pwrite on an O_APPEND descriptor would ignore it).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	fd, err := syscall.Open(n.path(), int(flags)|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	return fs.NewLoopbackFile(fd), 0, 0
}

// Create creates name, or opens the entry that folds alike (the kernel normally finds that
// one by Lookup first and never asks).
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p := n.child(name)
	flags &^= syscall.O_APPEND
	fd, err := syscall.Open(p, int(flags)|syscall.O_CREAT|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	ownByCaller(ctx, p)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, nil, 0, fs.ToErrno(err)
	}
	return n.newChild(ctx, &st, out), fs.NewLoopbackFile(fd), 0, 0
}

// made looks up an entry just created at p, removing it again when that fails.
func (n *node) made(ctx context.Context, p string, out *fuse.EntryOut, undo func(string) error) (*fs.Inode, syscall.Errno) {
	ownByCaller(ctx, p)
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		undo(p)
		return nil, fs.ToErrno(err)
	}
	return n.newChild(ctx, &st, out), 0
}

// Mkdir makes a directory; a name that folds like an existing entry is EEXIST.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	if err := syscall.Mkdir(p, mode); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.made(ctx, p, out, syscall.Rmdir)
}

// Symlink makes a symlink.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	if err := syscall.Symlink(target, p); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.made(ctx, p, out, syscall.Unlink)
}

// Link makes a hard link to another node of this mount.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	t, ok := target.(*node)
	if !ok || t.fs != n.fs {
		return nil, syscall.EXDEV
	}
	p := n.child(name)
	if err := syscall.Link(t.path(), p); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.made(ctx, p, out, syscall.Unlink)
}

// Unlink removes the entry name folds to.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return fs.ToErrno(syscall.Unlink(n.child(name)))
}

// Rmdir removes the directory name folds to.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return fs.ToErrno(syscall.Rmdir(n.child(name)))
}

// Rename renames, folding both names: renaming onto a name that folds like an existing entry
// replaces that entry. (Renaming an entry onto its own name in another case never gets here:
// the kernel finds one inode under both names and, as for hard links, does nothing. macOS would
// change the spelling.)
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok || np.fs != n.fs {
		return syscall.EXDEV
	}
	from, to := n.child(name), np.child(newName)
	return fs.ToErrno(unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, uint(flags)))
}

// Readlink reads a symlink.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	target, err := os.Readlink(n.path())
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return []byte(target), 0
}

// Readdir lists the backing directory, each entry in the spelling it was made with.
func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	return fs.NewLoopbackDirStream(n.path())
}

// Statfs reports the backing filesystem's figures.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var s syscall.Statfs_t
	if err := syscall.Statfs(n.path(), &s); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&s)
	return 0
}
