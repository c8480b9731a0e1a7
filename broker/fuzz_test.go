package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzParseAuthority: normalisation never panics, is idempotent, and yields only LDH names or
// canonical addresses.
func FuzzParseAuthority(f *testing.F) {
	for _, s := range []string{"example.com:443", "EXAMPLE.com.:80", "[::1]:443", "2130706433:443",
		"0x7f.1:443", "bücher.example:443", "[fe80::1%25eth0]:443", "a..b:1", "１２７.０.０.１:443", "xn--bcher-kva.example:443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAuthority(s, 0)
		if err != nil {
			return
		}
		b, err := ParseAuthority(a.String(), 0)
		if err != nil || b != a {
			t.Fatalf("%q → %q → %v, %v: not idempotent", s, a.String(), b, err)
		}
		if a.Host != "" && (a.Addr.IsValid() || checkLabels(a.Host) != nil) {
			t.Fatalf("%q → bad name %q", s, a.Host)
		}
		if a.Addr.IsValid() && a.Addr.Zone() != "" {
			t.Fatalf("%q → zoned address %v", s, a.Addr)
		}
		IsPublic(a.Addr)
	})
}

// memConn is a client connection fed from a byte slice; writes are kept.
type memConn struct {
	r   io.Reader
	out bytes.Buffer
}

func (m *memConn) Read(p []byte) (int, error)       { return m.r.Read(p) }
func (m *memConn) Write(p []byte) (int, error)      { return m.out.Write(p) }
func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (m *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzRequest feeds arbitrary bytes to a broker connection. Properties: no panic; the broker
// dials only public addresses or ones an address entry allows; every log line is one JSON
// object.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT public.test:443 HTTP/1.1\r\n" + authHeader + "\r\n",
		"GET http://public.test/x HTTP/1.1\r\nHost: public.test\r\n" + authHeader + "\r\n",
		"POST http://public.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n" + authHeader + "\r\n5\r\nhello\r\n0\r\n\r\nGET http://127.0.0.1/ HTTP/1.1\r\n" + authHeader + "\r\n",
		"CONNECT rebind.test:443 HTTP/1.1\r\n" + authHeader + "\r\n",
		"GET http://10.9.0.1:8080/ HTTP/1.1\r\n" + authHeader + "\r\n",
		"CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n" + authHeader + "\r\n",
	} {
		f.Add([]byte(s))
	}
	logPath := filepath.Join(f.TempDir(), "egress.jsonl")
	lg, err := OpenLog(context.Background(), logPath, 1<<30)
	if err != nil {
		f.Fatal(err)
	}
	res := fakeResolver{
		"public.test": {netip.MustParseAddr("93.184.216.34")},
		"rebind.test": {netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("93.184.216.34")},
		"mixed.test":  {netip.MustParseAddr("10.9.0.7")},
	}
	var bad string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !IsPublic(ap.Addr()) && !(netip.MustParsePrefix("10.9.0.0/16").Contains(ap.Addr()) && ap.Port() == 8080) {
			bad = addr
		}
		c1, c2 := net.Pipe()
		go func() { io.Copy(io.Discard, c2); c2.Close() }()
		return c1, nil
	}
	b, err := New(Config{Box: "fuzz", Secret: []byte(testSecret), Log: lg, Resolver: res, Dial: dial,
		Allow:  []string{"public.test", "*.test", "10.9.0.0/16:8080", "mixed.test:8080"},
		Limits: Limits{Rate: 1e12, Burst: 1 << 30, ResponseTimeout: time.Millisecond}})
	if err != nil {
		f.Fatal(err)
	}
	var offset int64
	f.Fuzz(func(t *testing.T, data []byte) {
		b.serveConn(context.Background(), &memConn{r: bytes.NewReader(data)})
		if bad != "" {
			t.Fatalf("dialled %s", bad)
		}
		fh, err := os.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		fh.Seek(offset, io.SeekStart)
		tail, _ := io.ReadAll(fh)
		offset += int64(len(tail))
		for _, line := range strings.Split(strings.TrimSuffix(string(tail), "\n"), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("invalid log line %q", line)
			}
		}
	})
}
