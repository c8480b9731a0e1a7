package inherit

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

// CloseOnExec marks every open descriptor numbered from and up close-on-exec: one
// close_range(2) (Linux 5.11 and later), else each descriptor listed in /proc/self/fd. It fails
// only when neither works, and then the caller must not start anything.
func CloseOnExec(from int) error {
	err := unix.CloseRange(uint(from), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// ENOSYS on an older kernel, EPERM or ENOSYS under a seccomp filter that does not know it.
	if werr := markListed("/proc/self/fd", from); werr != nil {
		return fmt.Errorf("mark inherited descriptors close-on-exec: close_range: %v; %w", err, werr)
	}
	return nil
}
