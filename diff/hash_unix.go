package diff

import "syscall"

// Open flags: never follow a symlink swapped in after lstat, never block on a FIFO.
const (
	syscallNoFollow = syscall.O_NOFOLLOW
	syscallNonBlock = syscall.O_NONBLOCK
)
