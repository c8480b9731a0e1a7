package plainrelay

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
)

// TestRelay: a CONNECT through the relay reaches the target and carries bytes both ways; a
// request that is not CONNECT gets no answer and no dial (control: the same target, reached).
func TestRelay(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	dials := make(chan struct{}, 4)
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			dials <- struct{}{}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go Serve(ln)

	ask := func(method string) (string, net.Conn) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, method+" "+target.Addr().String()+" HTTP/1.1\r\nHost: x\r\n\r\n")
		status, _ := bufio.NewReader(c).ReadString('\n')
		return status, c
	}
	status, c := ask("CONNECT")
	if !strings.Contains(status, " 200 ") {
		t.Fatalf("CONNECT answered %q, want 200", status)
	}
	io.WriteString(c, "ping\n")
	c.(*net.TCPConn).CloseWrite()
	echo, _ := io.ReadAll(c)
	c.Close()
	if string(echo) != "ping\n" {
		t.Errorf("relayed %q, want the echo of ping", echo)
	}
	<-dials
	status, c = ask("GET")
	c.Close()
	if status != "" {
		t.Errorf("GET answered %q, want nothing", status)
	}
	select {
	case <-dials:
		t.Error("a GET made the relay dial its target")
	default:
	}
}
