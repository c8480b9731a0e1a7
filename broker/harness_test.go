package broker

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testSecret is the box's proxy password in these tests.
const testSecret = "s3cret-s3cret-s3cret"

// authHeader is the Proxy-Authorization line a box would send.
var authHeader = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("box:"+testSecret)) + "\r\n"

// fakeResolver maps names to addresses; any other name fails, so no real lookup ever happens.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

// dialRecorder is the broker's dial hook: it records every address the broker asks for, sends
// redirected (public, fake) addresses to loopback test servers, dials loopback literals as they
// are, and refuses anything else, so a faulty broker can never reach a real network.
type dialRecorder struct {
	mu       sync.Mutex
	dialled  []string
	redirect map[string]string
}

func (d *dialRecorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialled = append(d.dialled, addr)
	target, ok := d.redirect[addr]
	d.mu.Unlock()
	if !ok {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsLoopback() {
			return nil, fmt.Errorf("test dial hook refuses %q: not loopback and not redirected", addr)
		}
		target = addr
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", target)
}

func (d *dialRecorder) addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialled...)
}

// testBroker is a broker serving on loopback with its log, resolver and dial hook.
type testBroker struct {
	addr    string
	logPath string
	dials   *dialRecorder
}

// startBroker runs a broker for the test's lifetime. mutate may adjust the config.
func startBroker(t *testing.T, allow []string, res fakeResolver, redirect map[string]string, mutate func(*Config)) *testBroker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logPath := filepath.Join(t.TempDir(), "egress-test.jsonl")
	lg, err := OpenLog(ctx, logPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	dr := &dialRecorder{redirect: redirect}
	cfg := Config{Box: "test-abc123", Allow: allow, Secret: []byte(testSecret), Log: lg, Resolver: res, Dial: dr.dial}
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		lg.Close()
	})
	return &testBroker{addr: ln.Addr().String(), logPath: logPath, dials: dr}
}

// roundTrip sends raw bytes on a new connection and reads one response.
func (tb *testBroker) roundTrip(t *testing.T, raw string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", tb.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(raw + " x")[0]})
	if err != nil {
		t.Fatalf("read response to %q: %v", raw, err)
	}
	return resp, c, br
}

// entries reads the egress log, failing unless every line is one valid JSON object.
func (tb *testBroker) entries(t *testing.T) []Entry {
	t.Helper()
	data, err := os.ReadFile(tb.logPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []Entry
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		var e Entry
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || dec.More() {
			t.Fatalf("egress log line %d is not one JSON object: %q (%v)", i+1, line, err)
		}
		out = append(out, e)
	}
	return out
}

// waitEntries waits for the log to hold n lines (tunnels log when they end) and returns them.
func (tb *testBroker) waitEntries(t *testing.T, n int) []Entry {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		es := tb.entries(t)
		if len(es) >= n || time.Now().After(deadline) {
			if len(es) != n {
				t.Fatalf("egress log has %d lines, want %d: %+v", len(es), n, es)
			}
			return es
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// upstream is a loopback HTTP server recording what it received.
type upstream struct {
	ln   net.Listener
	mu   sync.Mutex
	reqs []*http.Request
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{ln: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		u.mu.Lock()
		u.reqs = append(u.reqs, r)
		u.mu.Unlock()
		fmt.Fprintf(w, "hello from upstream: %s %s %d", r.Method, r.URL.RequestURI(), len(body))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

func (u *upstream) addr() string { return u.ln.Addr().String() }

func (u *upstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.reqs...)
}

var errTimeout = errors.New("timeout")

// waitClosed reads from c until EOF or error, failing after d.
func waitClosed(c net.Conn, br *bufio.Reader, d time.Duration) error {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return errTimeout
	}
	return nil
}
