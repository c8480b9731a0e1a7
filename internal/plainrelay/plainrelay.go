// Package plainrelay is the baseline of every proxy benchmark: a CONNECT relay with no checks at
// all (no authentication, no allow-list, no log, no limits). It reads the request head, dials
// the target it names, answers 200 and copies both ways with io.Copy (splice(2), as the broker
// does). What it adds over direct TCP is what any proxy adds; what the broker adds over it is the
// broker's own cost. It serves only the listener it is given (the benchmarks' are on loopback).
package plainrelay

import (
	"bufio"
	"io"
	"net"
	"strings"
)

// Serve relays every connection ln accepts until ln is closed, and returns Accept's error.
func Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go relay(c)
	}
}

// relay handles one CONNECT request.
func relay(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if err != nil {
		return
	}
	for {
		l, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		if l == "\r\n" {
			break
		}
	}
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "CONNECT" {
		return
	}
	up, err := net.Dial("tcp", f[1])
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		closeWrite(up)
		close(done)
	}()
	io.Copy(c, up)
	closeWrite(c)
	<-done
}

// closeWrite half-closes a TCP connection so that the other side sees the end of the stream.
func closeWrite(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		t.CloseWrite()
	}
}
