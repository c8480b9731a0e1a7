package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// publicSetup points the fake public address of public.test at a loopback upstream, on both
// default ports, so the allowed path runs without an explicit address entry.
func publicSetup(t *testing.T, mutate func(*Config)) (*testBroker, *upstream) {
	up := startUpstream(t)
	redirect := map[string]string{"93.184.216.34:443": up.addr(), "93.184.216.34:80": up.addr()}
	return startBroker(t, []string{"public.test", "*.wild.test"}, fakeResolver{
		"public.test":   {netip.MustParseAddr("93.184.216.34")},
		"api.wild.test": {netip.MustParseAddr("93.184.216.34")},
	}, redirect, mutate), up
}

// TestConnectAllowed: an allowed name tunnels to exactly the checked address, whatever case and
// trailing dot the box used, and the tunnel is logged once with its byte counts.
func TestConnectAllowed(t *testing.T) {
	for _, target := range []string{"public.test:443", "PUBLIC.Test.:443", "api.wild.test:443"} {
		t.Run(target, func(t *testing.T) {
			tb, up := publicSetup(t, nil)
			resp, c, br := tb.roundTrip(t, "CONNECT "+target+" HTTP/1.1\r\n"+authHeader+"\r\n")
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT status %d", resp.StatusCode)
			}
			fmt.Fprintf(c, "GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			inner, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(inner.Body)
			if !strings.Contains(string(body), "GET /through") {
				t.Errorf("tunnel answer %q", body)
			}
			c.Close()
			e := tb.waitEntries(t, 1)[0]
			if e.Decision != Allow || e.Addr != "93.184.216.34:443" || e.Status != 200 || e.BytesUp == 0 || e.BytesDown == 0 || e.Rule == "" {
				t.Errorf("log entry %+v", e)
			}
			if d := tb.dials.addrs(); len(d) != 1 || d[0] != "93.184.216.34:443" {
				t.Errorf("dialled %v, want exactly the checked address", d)
			}
			if len(up.requests()) != 1 {
				t.Errorf("upstream saw %d requests", len(up.requests()))
			}
		})
	}
}

// TestExplicitAddressAllowed: a private (here loopback) destination is reachable only when an
// address entry names it, both literally and through a name that resolves to it.
func TestExplicitAddressAllowed(t *testing.T) {
	up := startUpstream(t)
	ap := netip.MustParseAddrPort(up.addr())
	port := fmt.Sprint(ap.Port())
	tb := startBroker(t, []string{"host.test:" + port, "127.0.0.1:" + port}, fakeResolver{
		"host.test": {ap.Addr()},
	}, nil, nil)
	for _, target := range []string{up.addr(), "host.test:" + port} {
		resp, c, _ := tb.roundTrip(t, "CONNECT "+target+" HTTP/1.1\r\n"+authHeader+"\r\n")
		if resp.StatusCode != 200 {
			t.Errorf("CONNECT %s: status %d", target, resp.StatusCode)
		}
		c.Close()
	}
	// Tunnels are logged when they end, so the two lines may come in either order.
	var byName *Entry
	for _, e := range tb.waitEntries(t, 2) {
		if e.Host == "host.test" {
			byName = &e
		}
	}
	if byName == nil {
		t.Fatal("no log entry for host.test")
	}
	if byName.Rule != "host.test:"+port+", 127.0.0.1:"+port {
		t.Errorf("rule %q should name both entries", byName.Rule)
	}
	// Another port of the same address stays closed.
	resp, _, _ := tb.roundTrip(t, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n"+authHeader+"\r\n")
	if resp.StatusCode != 403 {
		t.Errorf("unlisted port: status %d", resp.StatusCode)
	}
}

// TestPlainHTTPKeepAlive: absolute-URI requests are forwarded in origin form without proxy
// credentials or hop-by-hop headers, and every request on one connection is decided on its own.
func TestPlainHTTPKeepAlive(t *testing.T) {
	tb, up := publicSetup(t, nil)
	c, err := net.Dial("tcp", tb.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "POST http://public.test/p?q=1 HTTP/1.1\r\nHost: public.test\r\n%sConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nX-End: 1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", authHeader)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "hello from upstream: POST /p?q=1 5" || resp.Close {
		t.Fatalf("first answer %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
	got := up.requests()[0]
	for _, h := range []string{"Proxy-Authorization", "X-Hop", "Keep-Alive"} {
		if got.Header.Get(h) != "" {
			t.Errorf("upstream received %s", h)
		}
	}
	if got.Host != "public.test" || got.Header.Get("X-End") != "1" {
		t.Errorf("upstream got host %q headers %v", got.Host, got.Header)
	}
	// The second request on the same connection is refused on its own merits.
	fmt.Fprintf(c, "GET http://evil.test/ HTTP/1.1\r\n%s\r\n", authHeader)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("second request: %v %v", resp, err)
	}
	es := tb.waitEntries(t, 2)
	if es[0].Decision != Allow || es[0].Status != 200 || es[1].Decision != Deny || es[1].Host != "evil.test" {
		t.Errorf("log %+v", es)
	}
	if len(tb.dials.addrs()) != 1 {
		t.Errorf("dialled %v", tb.dials.addrs())
	}
}

// TestCurl drives the broker with curl, a real client, through both paths and without
// credentials.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	tb, _ := publicSetup(t, nil)
	proxy := "http://box:" + testSecret + "@" + tb.addr
	run := func(args ...string) string {
		out, _ := exec.Command(curl, append([]string{"-sS", "-o", "/dev/stderr", "-w", "%{http_code}", "--max-time", "10", "--noproxy", ""}, args...)...).Output()
		return string(out)
	}
	if got := run("--proxy", proxy, "http://public.test/plain"); got != "200" {
		t.Errorf("curl plain http: %s", got)
	}
	if got := run("--proxy", proxy, "--proxytunnel", "http://public.test:443/tunnel"); got != "200" {
		t.Errorf("curl tunnel: %s", got)
	}
	if got := run("--proxy", "http://"+tb.addr, "http://public.test/"); got != "407" {
		t.Errorf("curl without secret: %s", got)
	}
	if got := run("--proxy", proxy, "http://127.0.0.1:9/"); got != "403" {
		t.Errorf("curl to loopback: %s", got)
	}
	// Each line is written when its connection ends, which can trail curl's exit: compare
	// the lines as a set.
	got := map[string]int{}
	for _, e := range tb.waitEntries(t, 4) {
		got[fmt.Sprintf("%s %d", e.Decision, e.Status)]++
	}
	want := map[string]int{Allow + " 200": 2, Deny + " 407": 1, Deny + " 403": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("log decisions %v, want %v", got, want)
	}
}

// TestTunnelCap: the box cannot hold more tunnels than its cap.
func TestTunnelCap(t *testing.T) {
	tb, _ := publicSetup(t, func(c *Config) { c.Limits.MaxTunnels = 2 })
	for i := range 2 {
		if resp, _, _ := tb.roundTrip(t, "CONNECT public.test:443 HTTP/1.1\r\n"+authHeader+"\r\n"); resp.StatusCode != 200 {
			t.Fatalf("tunnel %d: %d", i, resp.StatusCode)
		}
	}
	resp, _, _ := tb.roundTrip(t, "CONNECT public.test:443 HTTP/1.1\r\n"+authHeader+"\r\n")
	if resp.StatusCode != 429 || resp.Header.Get("X-Corral") != "limit" {
		t.Errorf("third tunnel: %d", resp.StatusCode)
	}
	if d := tb.dials.addrs(); len(d) != 2 {
		t.Errorf("dialled %d times, want 2", len(d))
	}
}

// TestSlowloris: a client dribbling its header is cut off with 408 after HeaderTimeout.
func TestSlowloris(t *testing.T) {
	tb, _ := publicSetup(t, func(c *Config) { c.Limits.HeaderTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", tb.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	br := bufio.NewReader(c)
	go func() {
		for _, b := range []byte("CONNECT public.test:443 HTTP/1.1\r\nX-") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 408 {
		t.Fatalf("slow header: %v %v", resp, err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("cut off after %v", el)
	}
	if err := waitClosed(c, br, 2*time.Second); err != nil {
		t.Errorf("connection not closed: %v", err)
	}
	tb.waitEntries(t, 1)
}

// TestRateLimit: requests beyond the bucket get 429.
func TestRateLimit(t *testing.T) {
	tb, _ := publicSetup(t, func(c *Config) { c.Limits.Rate, c.Limits.Burst = 0.01, 2 })
	var codes []int
	for range 3 {
		resp, _, _ := tb.roundTrip(t, "GET http://evil.test/ HTTP/1.1\r\n"+authHeader+"\r\n")
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[403 403 429]" {
		t.Errorf("codes %v", codes)
	}
}

// TestTunnelIdleTimeout: a tunnel with no data either way is closed by the sweeper.
func TestTunnelIdleTimeout(t *testing.T) {
	tb, _ := publicSetup(t, func(c *Config) { c.Limits.TunnelIdleTimeout = 300 * time.Millisecond })
	resp, c, br := tb.roundTrip(t, "CONNECT public.test:443 HTTP/1.1\r\n"+authHeader+"\r\n")
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	if err := waitClosed(c, br, 5*time.Second); err != nil {
		t.Fatalf("idle tunnel not closed: %v", err)
	}
	tb.waitEntries(t, 1)
}

// TestListenLoopbackOnly: the broker refuses to listen anywhere but loopback.
func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "localhost:0", "192.168.5.2:0", ":0"} {
		if ln, err := Listen(context.Background(), addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded", addr)
		}
	}
}

// TestNewRejects: a missing secret or bad allow-list entries stop the broker before it starts,
// naming every bad entry.
func TestNewRejects(t *testing.T) {
	if _, err := New(Config{Secret: []byte("short")}); err == nil {
		t.Error("short secret accepted")
	}
	_, err := New(Config{Secret: []byte(testSecret), Allow: []string{"ok.test", "bad host", "*.", "x:0443"}})
	if err == nil || !strings.Contains(err.Error(), `entry 2 "bad host"`) || !strings.Contains(err.Error(), `entry 4 "x:0443"`) {
		t.Errorf("error %v should name entries 2, 3 and 4", err)
	}
}

// TestExpectContinue: a client waiting for 100 Continue gets it once the request is allowed.
func TestExpectContinue(t *testing.T) {
	tb, up := publicSetup(t, nil)
	resp, c, br := tb.roundTrip(t, "POST http://public.test/e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n"+authHeader+"\r\n")
	if resp.StatusCode != 100 {
		t.Fatalf("got %d before sending the body, want 100", resp.StatusCode)
	}
	io.WriteString(c, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("final answer %v %v", resp, err)
	}
	if r := up.requests(); len(r) != 1 || r[0].Header.Get("Expect") != "" {
		t.Errorf("upstream requests %v", r)
	}
}

// TestShutdownClosesClients: cancelling Serve closes idle keep-alive clients and open tunnels
// at once instead of waiting for their timeouts.
func TestShutdownClosesClients(t *testing.T) {
	up := startUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	b, err := New(Config{Allow: []string{up.addr()}, Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := Listen(ctx, "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln) }()
	tb := &testBroker{addr: ln.Addr().String()}
	resp, _, _ := tb.roundTrip(t, "GET http://"+up.addr()+"/ HTTP/1.1\r\n"+authHeader+"\r\n")
	io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("keep-alive request: %d close=%v", resp.StatusCode, resp.Close)
	}
	if resp, _, _ := tb.roundTrip(t, "CONNECT "+up.addr()+" HTTP/1.1\r\n"+authHeader+"\r\n"); resp.StatusCode != 200 {
		t.Fatalf("tunnel: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve still waiting for idle clients 3s after cancellation")
	}
}

// recordingResolver records every name it is asked for.
type recordingResolver struct {
	fakeResolver
	mu    sync.Mutex
	names []string
}

func (r *recordingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.names = append(r.names, host)
	r.mu.Unlock()
	return r.fakeResolver.LookupNetIP(ctx, network, host)
}

// TestRefusedNameNotResolved: a name the allow-list does not name is refused before any DNS
// lookup, so a box cannot leak data through the host's resolver by asking for names.
func TestRefusedNameNotResolved(t *testing.T) {
	res := &recordingResolver{fakeResolver: fakeResolver{"public.test": {netip.MustParseAddr("93.184.216.34")}}}
	up := startUpstream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dr := &dialRecorder{redirect: map[string]string{"93.184.216.34:443": up.addr()}}
	b, err := New(Config{Allow: []string{"public.test"}, Secret: []byte(testSecret), Resolver: res, Dial: dr.dial})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := Listen(ctx, "127.0.0.1:0")
	go b.Serve(ctx, ln)
	tb := &testBroker{addr: ln.Addr().String()}
	for _, target := range []string{"c2VjcmV0.exfil.test:443", "public.test:8443", "public.test:443"} {
		resp, c, _ := tb.roundTrip(t, "CONNECT "+target+" HTTP/1.1\r\n"+authHeader+"\r\n")
		c.Close()
		if want := map[bool]int{true: 200, false: 403}[target == "public.test:443"]; resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", target, resp.StatusCode, want)
		}
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	if len(res.names) != 1 || res.names[0] != "public.test" {
		t.Errorf("resolver was asked for %v, want only the allowed public.test", res.names)
	}
}
