//go:build unix

package session

import "syscall"

// noFollow refuses to open a symlink as the final path element.
const noFollow = syscall.O_NOFOLLOW
