package cover

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// EnsureBoxDirs makes each of the plan's box_dirs directories that is missing on the host,
// empty, with mode 0755, so the guest has a mount point for it; it returns the paths it made.
// It walks from the top level one component at a time through directory descriptors opened
// with O_NOFOLLOW, so a symlink planted after Resolve (the box writes into the project) is
// refused rather than followed out of the repository.
func (p *Plan) EnsureBoxDirs() ([]string, error) {
	var made []string
	for _, e := range p.BoxDirs {
		ok, err := mkdirNoFollow(p.TopLevel, e.Rel)
		if err != nil {
			return made, fmt.Errorf("create box_dirs[%d] %q on the host: %w", e.Index, e.Rel, err)
		}
		if ok {
			made = append(made, e.Rel)
		}
	}
	return made, nil
}

// mkdirNoFollow makes rel under top, each component a directory reached without following a
// symlink, and reports whether the last one was made.
func mkdirNoFollow(top, rel string) (bool, error) {
	fd, err := unix.Open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("open %q: %w", top, err)
	}
	made := false
	for _, c := range strings.Split(rel, "/") {
		err := unix.Mkdirat(fd, c, 0o755)
		made = err == nil
		if err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return false, fmt.Errorf("mkdir %q: %w", c, err)
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return false, fmt.Errorf("open %q without following symlinks (a symlink or not a directory): %w", c, err)
		}
		fd = next
	}
	unix.Close(fd)
	return made, nil
}
