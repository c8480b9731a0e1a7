//go:build !linux

package sshtest

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// OpenPTY fails outside Linux: it unlocks and names the pty through Linux's ioctls. It exists so
// that the tests that use it compile (and go vet runs) for every host the binary is built for.
func OpenPTY() (master, tty *os.File, err error) {
	return nil, nil, errors.New("sshtest: OpenPTY needs Linux")
}

// SetSize sets the window size of a terminal.
func SetSize(f *os.File, rows, cols int) error {
	return unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
}
