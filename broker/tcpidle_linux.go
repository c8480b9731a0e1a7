package broker

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// tcpIdle is how long since data last moved either way on a TCP socket. Linux's TCP_INFO says
// so directly (tcpi_last_data_recv/sent, in ms), so the clock is not needed.
func tcpIdle(c net.Conn, _ *idleClock, _ time.Time) (time.Duration, bool) {
	raw, ok := rawTCP(c)
	if !ok {
		return 0, false
	}
	var info *unix.TCPInfo
	var err error
	raw.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	if err != nil || info == nil {
		return 0, false
	}
	ms := min(info.Last_data_recv, info.Last_data_sent)
	return time.Duration(ms) * time.Millisecond, true
}
