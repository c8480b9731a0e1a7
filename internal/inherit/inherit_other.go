//go:build !linux

package inherit

// CloseOnExec marks every open descriptor numbered from and up close-on-exec, each one listed
// in /dev/fd. It fails only when that cannot be read, and then the caller must not start
// anything.
func CloseOnExec(from int) error {
	return markListed("/dev/fd", from)
}
