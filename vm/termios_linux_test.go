package vm

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings (TCGETS on Linux).
const ioctlGetTermios = unix.TCGETS
