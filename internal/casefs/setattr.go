//go:build linux

package casefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Setattr changes mode, owner, size and times through the open file when there is one, else by
// the backing path (never following a symlink).
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if s, ok := f.(fs.FileSetattrer); ok {
		return s.Setattr(ctx, in, out)
	}
	p := n.path()
	if m, ok := in.GetMode(); ok {
		if err := syscall.Chmod(p, m); err != nil {
			return fs.ToErrno(err)
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		u, g := -1, -1
		if uok {
			u = int(uid)
		}
		if gok {
			g = int(gid)
		}
		if err := unix.Fchownat(unix.AT_FDCWD, p, u, g, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fs.ToErrno(err)
		}
	}
	if sz, ok := in.GetSize(); ok { // before the times, so an explicit mtime survives
		if err := syscall.Truncate(p, int64(sz)); err != nil {
			return fs.ToErrno(err)
		}
	}
	if errno := setTimes(p, in); errno != 0 {
		return errno
	}
	return n.Getattr(ctx, nil, out)
}

// setTimes sets the access and modification times in is asks for, leaving the others alone.
func setTimes(p string, in *fuse.SetAttrIn) syscall.Errno {
	mtime, mok := in.GetMTime()
	atime, aok := in.GetATime()
	if !mok && !aok {
		return 0
	}
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	var err error
	if aok {
		if ts[0], err = unix.TimeToTimespec(atime); err != nil {
			return fs.ToErrno(err)
		}
	}
	if mok {
		if ts[1], err = unix.TimeToTimespec(mtime); err != nil {
			return fs.ToErrno(err)
		}
	}
	return fs.ToErrno(unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW))
}
