//go:build !linux

package broker

import "syscall"

// deferAccept does nothing where TCP_DEFER_ACCEPT does not exist: the broker then accepts at the
// handshake and waits for the request itself, as it did everywhere before.
func deferAccept(network, address string, c syscall.RawConn) error { return nil }
