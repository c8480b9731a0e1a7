package broker

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// tcpIdle is how long since data last moved either way on a TCP socket. Darwin's
// TCP_CONNECTION_INFO has no time of the last data, only byte counters, so the clock remembers
// when their sum last changed: the idle time is measured to the sweeper's period.
func tcpIdle(c net.Conn, clock *idleClock, now time.Time) (time.Duration, bool) {
	raw, ok := rawTCP(c)
	if !ok {
		return 0, false
	}
	var info *unix.TCPConnectionInfo
	var err error
	raw.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPConnectionInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_CONNECTION_INFO)
	})
	if err != nil || info == nil {
		return 0, false
	}
	return clock.observe(info.Rxbytes+info.Txbytes, now), true
}
