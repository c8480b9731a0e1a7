package broker

import (
	"net"
	"syscall"
	"time"
)

// idleClock turns a socket's byte counters into an idle time, for kernels that count the bytes
// of a TCP connection but do not say when data last moved (Darwin's TCP_CONNECTION_INFO).
type idleClock struct {
	moved uint64    // bytes both ways when last observed
	since time.Time // when moved last changed (zero: never observed)
}

// observe records that moved bytes have crossed the socket by now, and returns how long the
// count has stood still: zero at the first observation and whenever it changed since the last.
func (k *idleClock) observe(moved uint64, now time.Time) time.Duration {
	if k.since.IsZero() || moved != k.moved {
		k.moved, k.since = moved, now
		return 0
	}
	return now.Sub(k.since)
}

// rawTCP returns the raw socket of a TCP connection, and false for any other connection.
func rawTCP(c net.Conn) (syscall.RawConn, bool) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, false
	}
	raw, err := tc.SyscallConn()
	return raw, err == nil
}
