package policy

// This file reads configuration files. Rules:
//   - the repository's file is opened with O_NOFOLLOW|O_NONBLOCK and must be a regular file:
//     a symlink (which could point at a host file, or at a FIFO that hangs the read), a FIFO,
//     a device or a directory is refused, and opening a FIFO never blocks;
//   - trusted files may be symlinks (dotfile managers) but must resolve to a regular file;
//   - no file is read past MaxFileSize: the read stops at MaxFileSize+1 bytes, so a file that
//     grows while it is read cannot make it unbounded;
//   - a missing file is an empty layer; every other failure is an error.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileSize is the largest configuration file read.
const MaxFileSize = 64 << 10

// errTooLarge reports a file over MaxFileSize.
var errTooLarge = fmt.Errorf("larger than %d bytes", MaxFileSize)

// readConfigFile returns the content of path, or (nil, nil) when it does not exist. With
// noFollow, a symlink in the last component is refused rather than followed.
func readConfigFile(ctx context.Context, path string, noFollow bool) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if noFollow {
			// A dangling symlink is not "no file": O_NOFOLLOW would have said ELOOP had it
			// existed, but say so plainly when a symlink is there.
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, errors.New("is a symlink; the repository's configuration must be a regular file")
			}
		}
		return nil, nil
	}
	if err != nil {
		if noFollow && (errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)) {
			return nil, errors.New("is a symlink; the repository's configuration must be a regular file")
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file (%s)", fileType(fi.Mode()))
	}
	if fi.Size() > MaxFileSize {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, errTooLarge
	}
	return data, nil
}

// fileType names a non-regular file mode for an error message.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "not regular: " + m.String()
}
