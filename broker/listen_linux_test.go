//go:build linux

package broker

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// deferSeconds reads TCP_DEFER_ACCEPT off a listener (0 when it is not set).
func deferSeconds(t *testing.T, ln net.Listener) int {
	t.Helper()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

// TestListenDefersAccept: the broker's listener has TCP_DEFER_ACCEPT set; a plain listener, the
// control, does not.
func TestListenDefersAccept(t *testing.T) {
	ln, err := Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if got := deferSeconds(t, ln); got <= 0 {
		t.Errorf("broker listener: TCP_DEFER_ACCEPT = %d, want > 0", got)
	}
	if got := deferSeconds(t, plain); got != 0 {
		t.Errorf("control listener: TCP_DEFER_ACCEPT = %d, want 0", got)
	}
}

// TestSilentConnectionTakesNoSlot: with room for one connection, a connection that has sent
// nothing is not yet the broker's (the kernel holds it until its first bytes), so a request on a
// second connection is served. The control sends the first byte of a request on the first
// connection: that one is the broker's, and the second is refused with 429.
func TestSilentConnectionTakesNoSlot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first string
		want  int
	}{
		{"silent first connection", "", 200},
		{"control: first connection started its request", "C", 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, _ := publicSetup(t, func(c *Config) { c.Limits.MaxConns = 1 })
			first, err := net.Dial("tcp", tb.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			if tc.first != "" {
				first.Write([]byte(tc.first))
			}
			time.Sleep(300 * time.Millisecond) // let the broker accept it, if it ever will
			resp, _, _ := tb.roundTrip(t, "CONNECT public.test:443 HTTP/1.1\r\n"+authHeader+"\r\n")
			if resp.StatusCode != tc.want {
				t.Errorf("second connection answered %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestLateRequestServed: a client that connects, waits, then sends its request is served as
// usual: deferring the accept only delays when the broker sees the connection.
func TestLateRequestServed(t *testing.T) {
	tb, _ := publicSetup(t, nil)
	c, err := net.Dial("tcp", tb.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(1500 * time.Millisecond) // past the first SYN-ACK retransmit
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("CONNECT public.test:443 HTTP/1.1\r\n" + authHeader + "\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if got := string(buf[:n]); len(got) < 12 || got[:12] != "HTTP/1.1 200" {
		t.Fatalf("late request answered %q (%v), want a 200", got, err)
	}
}
