package broker

// Where the broker's added connect latency goes (connect → 200), one benchmark per step of the
// CONNECT path in the order serveConn takes them, plus a plain Go relay with no checks as the
// baseline that every proxy process pays (an extra TCP connection and goroutine wake-ups):
//
//	go test ./broker -run '^$' -bench 'Step|Connect' -benchmem -count 5
//
// BenchmarkConnectSetup − BenchmarkPlainRelayConnect is the broker's own cost; the Step
// benchmarks say which step it is spent in.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/plainrelay"
)

// stepBroker is a broker allowing sink (a literal loopback address) and the name "sink.test",
// which its fake resolver maps to the same address, with a real log file.
func stepBroker(b *testing.B, sink string) *Broker {
	lg, err := OpenLog(context.Background(), filepath.Join(b.TempDir(), "egress.jsonl"), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lg.Close() })
	ap := netip.MustParseAddrPort(sink)
	br, err := New(Config{Box: "bench", Allow: []string{sink, "sink.test:" + strconv.Itoa(int(ap.Port()))},
		Secret: []byte(testSecret), Log: lg, Resolver: fakeResolver{"sink.test": {ap.Addr()}},
		Limits: Limits{Rate: 1e9, Burst: 1 << 30, MaxTunnels: 4096}})
	if err != nil {
		b.Fatal(err)
	}
	return br
}

// tcpPair returns the two ends of one loopback TCP connection.
func tcpPair(b *testing.B) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); acc <- c }()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	server = <-acc
	b.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func connectRequest(sink string) string {
	return "CONNECT " + sink + " HTTP/1.1\r\nHost: " + sink + "\r\n" + authHeader + "\r\n"
}

// BenchmarkStepReadRequest is reading one CONNECT request off a socket: deadlines, the raw
// framing checks, the token bucket and http.ReadRequest.
func BenchmarkStepReadRequest(b *testing.B) {
	sink := benchSink(b)
	br := stepBroker(b, sink)
	client, server := tcpPair(b)
	dc := &deadlineConn{Conn: server}
	rd := br.getReader(dc)
	raw := connectRequest(sink)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		io.WriteString(client, raw)
		if _, _, ok := br.readRequest(dc, rd); !ok {
			b.Fatal("request refused")
		}
	}
}

func parsedConnect(b *testing.B, sink string) *http.Request {
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(connectRequest(sink))))
	if err != nil {
		b.Fatal(err)
	}
	return req
}

// BenchmarkStepAuthority is the authority and Host checks of serveConnect.
func BenchmarkStepAuthority(b *testing.B) {
	req := parsedConnect(b, "127.0.0.1:8080")
	b.ReportAllocs()
	for range b.N {
		a, err := ParseAuthority(req.RequestURI, 0)
		if err != nil {
			b.Fatal(err)
		}
		if ha, err := ParseAuthority(req.Host, a.Port); err != nil || ha != a {
			b.Fatal("host mismatch")
		}
	}
}

// BenchmarkStepAuth is the Proxy-Authorization check.
func BenchmarkStepAuth(b *testing.B) {
	br := stepBroker(b, "127.0.0.1:8080")
	req := parsedConnect(b, "127.0.0.1:8080")
	b.ReportAllocs()
	for range b.N {
		if !br.authorized(req) {
			b.Fatal("not authorized")
		}
	}
}

// BenchmarkStepDecideAddr is the allow-list decision for a literal address (no DNS).
func BenchmarkStepDecideAddr(b *testing.B) { benchDecide(b, "127.0.0.1:8080") }

// BenchmarkStepDecideName is the decision for an allowed name, through a resolver that answers
// at once: the broker's own cost around a lookup (a real lookup adds the resolver's time).
func BenchmarkStepDecideName(b *testing.B) { benchDecide(b, "sink.test:8080") }

// benchDecide times the allow-list decision for authority, which stepBroker allows.
func benchDecide(b *testing.B, authority string) {
	br := stepBroker(b, "127.0.0.1:8080")
	a, _ := ParseAuthority(authority, 0)
	b.ReportAllocs()
	for range b.N {
		if _, ref := br.decide(context.Background(), a); ref != nil {
			b.Fatal(ref.reason)
		}
	}
}

// BenchmarkStepDial is dialling the checked address (and closing it again).
func BenchmarkStepDial(b *testing.B) {
	sink := benchSink(b)
	br := stepBroker(b, sink)
	ap := netip.MustParseAddrPort(sink)
	b.ReportAllocs()
	for range b.N {
		c, _, err := br.dialChecked(context.Background(), []netip.Addr{ap.Addr()}, ap.Port())
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkStepRespond is writing the 200 answer to the client.
func BenchmarkStepRespond(b *testing.B) {
	client, server := tcpPair(b)
	go io.Copy(io.Discard, client)
	b.ReportAllocs()
	for range b.N {
		if _, err := io.WriteString(server, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepLogLine is one egress log line (encode, lock, append); for an allowed tunnel it is
// written when the tunnel ends, so it is not on the connect path, but a refusal pays it first.
func BenchmarkStepLogLine(b *testing.B) {
	br := stepBroker(b, "127.0.0.1:8080")
	e := Entry{Method: http.MethodConnect, Host: "127.0.0.1", Port: 8080, Addr: "127.0.0.1:8080",
		Rule: "127.0.0.1:8080", Decision: Allow, Status: 200, BytesUp: 1 << 20, BytesDown: 1 << 10}
	start := time.Now()
	b.ReportAllocs()
	for range b.N {
		br.record(e, start)
	}
}

// BenchmarkStepSyscall is one getpid(2): the yardstick for the others, since on a loaded
// machine every step above is mostly the price of its system calls.
func BenchmarkStepSyscall(b *testing.B) {
	for range b.N {
		syscall.Getpid()
	}
}

// plainRelay is a CONNECT relay with no checks at all: read the request head, dial the target
// it names, answer 200, copy both ways. It is the least any proxy process adds.
func plainRelay(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go plainrelay.Serve(ln)
	return ln.Addr().String()
}

// BenchmarkPlainRelayConnect is the baseline for BenchmarkConnectSetup: the same client
// CONNECT through plainRelay.
func BenchmarkPlainRelayConnect(b *testing.B) {
	sink := benchSink(b)
	proxy := plainRelay(b)
	b.ResetTimer()
	for range b.N {
		connectVia(b, proxy, sink).Close()
	}
}
