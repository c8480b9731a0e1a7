package vm

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings (TIOCGETA on Darwin).
const ioctlGetTermios = unix.TIOCGETA
