package main

// The plain relay is the baseline of every proxy figure: a CONNECT relay in Go with no checks at
// all (no authentication, no allow-list, no log, no limits): read the request head, dial the
// target it names, answer 200, copy both ways with io.Copy (splice(2), as the broker does). What
// it adds over direct TCP is what any proxy process adds on this machine (a second TCP
// connection, a process to schedule); what the broker adds over it is the broker's own cost.
// It runs as a child of brokerbench (brokerbench -relay-serve), so it is a separate process like
// every other proxy, and only ever listens on loopback.

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"

	"github.com/git-corral/git-corral/internal/plainrelay"
)

// serveRelay runs the plain relay on a loopback port, printing its address first, until the
// parent closes our standard input.
func serveRelay() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	return plainrelay.Serve(ln)
}

// startRelay starts this program again as the plain relay.
func startRelay(tmp, sinkAddr string) (*target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-relay-serve")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	line, err := firstLine(cmd, "the plain relay")
	if err != nil {
		in.Close()
		return nil, err
	}
	return &target{name: "relay", proxy: line, cmd: cmd, stdin: in}, nil
}
