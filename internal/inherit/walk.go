package inherit

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// markListed marks close-on-exec each descriptor from and up named in dir, the process's own
// descriptor directory. The directory's own descriptor is among them, and is closed anyway.
func markListed(dir string, from int) error {
	names, err := readNames(dir)
	if err != nil {
		return fmt.Errorf("list inherited descriptors in %s: %w", dir, err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < from {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}

func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
