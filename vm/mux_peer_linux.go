package vm

import (
	"net"
	"syscall"
)

// peerUID returns the uid of the process on the other end of c (SO_PEERCRED).
func peerUID(c *net.UnixConn) (uid int, known bool, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var cred *syscall.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, false, err
	}
	if serr != nil {
		return 0, false, serr
	}
	return int(cred.Uid), true, nil
}
