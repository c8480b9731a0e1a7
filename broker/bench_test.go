package broker

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
)

// benchSink accepts connections and discards what they send until EOF.
func benchSink(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// benchBroker runs a broker allowing sink, with the real dialer and a real log file.
func benchBroker(b *testing.B, sink string) string {
	ctx, cancel := context.WithCancel(context.Background())
	lg, err := OpenLog(ctx, filepath.Join(b.TempDir(), "egress.jsonl"), 0)
	if err != nil {
		b.Fatal(err)
	}
	br, err := New(Config{Box: "bench", Allow: []string{sink}, Secret: []byte(testSecret), Log: lg,
		Limits: Limits{Rate: 1e9, Burst: 1 << 30, MaxTunnels: 4096}})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := Listen(ctx, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { br.Serve(ctx, ln); close(done) }()
	b.Cleanup(func() { cancel(); <-done; lg.Close() })
	return ln.Addr().String()
}

func connectVia(b *testing.B, proxy, sink string) net.Conn {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		b.Fatal(err)
	}
	io.WriteString(c, "CONNECT "+sink+" HTTP/1.1\r\n"+authHeader+"\r\n")
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64), nil)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("CONNECT: %v %v", resp, err)
	}
	return c
}

func pushBytes(b *testing.B, c net.Conn, n int) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(n))
	b.ResetTimer()
	for range b.N {
		for left := n; left > 0; left -= len(buf) {
			if _, err := c.Write(buf[:min(len(buf), left)]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	c.Close()
}

// BenchmarkDirectTCP is the baseline: bytes written straight to the sink.
func BenchmarkDirectTCP(b *testing.B) {
	c, err := net.Dial("tcp", benchSink(b))
	if err != nil {
		b.Fatal(err)
	}
	pushBytes(b, c, 64<<20)
}

// BenchmarkTunnelThroughput writes the same bytes through a broker tunnel.
func BenchmarkTunnelThroughput(b *testing.B) {
	sink := benchSink(b)
	pushBytes(b, connectVia(b, benchBroker(b, sink), sink), 64<<20)
}

// BenchmarkConnectSetup is one authenticated, decided, dialled and logged tunnel per op.
func BenchmarkConnectSetup(b *testing.B) {
	sink := benchSink(b)
	proxy := benchBroker(b, sink)
	b.ResetTimer()
	for range b.N {
		connectVia(b, proxy, sink).Close()
	}
}

// BenchmarkDirectConnect is the baseline for BenchmarkConnectSetup.
func BenchmarkDirectConnect(b *testing.B) {
	sink := benchSink(b)
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("tcp", sink)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
