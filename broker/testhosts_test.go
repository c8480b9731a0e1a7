package broker

import (
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestTestHostsSeam: a name the seam pins to loopback reaches the loopback server through the
// allow-list; the controls: the same loopback answer from the resolver is refused (rule 3), and
// a pinned name the allow-list does not name is refused without being dialled (rule 2).
func TestTestHostsSeam(t *testing.T) {
	up := startUpstream(t)
	ap := netip.MustParseAddrPort(up.addr())
	port := ap.Port()
	loop := []netip.Addr{ap.Addr()}
	allow := []string{"registry.npmjs.org:" + itoaPort(port)}
	get := func(tb *testBroker, host string) (int, string) {
		target := host + ":" + itoaPort(port)
		resp, _, _ := tb.roundTrip(t, "GET http://"+target+"/pkg HTTP/1.1\r\nHost: "+target+"\r\n"+authHeader+"Connection: close\r\n\r\n")
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	seam := startBroker(t, allow, fakeResolver{}, nil, func(c *Config) {
		c.TestHosts = map[string][]netip.Addr{"registry.npmjs.org": loop, "unlisted.example": loop}
	})
	if code, body := get(seam, "registry.npmjs.org"); code != http.StatusOK || !strings.Contains(body, "hello from upstream") {
		t.Fatalf("pinned, allowed name: %d %q; want the loopback upstream's answer", code, body)
	}
	if code, _ := get(seam, "unlisted.example"); code != http.StatusForbidden {
		t.Errorf("pinned name outside the allow-list: status %d, want 403", code)
	}
	// The allowed request's line is written when its relay ends, which can come after the
	// refusal's: each line is found by its host, not its place.
	es := seam.waitEntries(t, 2)
	byHost := map[string]Entry{}
	for _, e := range es {
		byHost[e.Host] = e
	}
	if a, d := byHost["registry.npmjs.org"], byHost["unlisted.example"]; a.Decision != Allow || d.Decision != Deny || d.Reason != "host not in allow-list" {
		t.Errorf("log: %+v", es)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("upstream saw %d requests, want only the allowed one", n)
	}

	plain := startBroker(t, allow, fakeResolver{"registry.npmjs.org": loop}, nil, nil)
	if code, _ := get(plain, "registry.npmjs.org"); code != http.StatusForbidden {
		t.Errorf("control: a resolver's loopback answer got status %d, want 403", code)
	}
	if es := plain.waitEntries(t, 1); es[0].Reason != "name resolves to a forbidden address" {
		t.Errorf("control log: %+v", es)
	}
}

// TestTestHostsLoopbackOnly: the seam names loopback addresses only, in its parser and in New.
func TestTestHostsLoopbackOnly(t *testing.T) {
	good, err := ParseTestHosts("registry.npmjs.org=127.0.0.5, pypi.org=::1,Files.PythonHosted.org.=127.0.0.5")
	if err != nil || len(good) != 3 || good["files.pythonhosted.org"][0] != netip.MustParseAddr("127.0.0.5") {
		t.Fatalf("ParseTestHosts: %v %v", good, err)
	}
	for _, bad := range []string{"pypi.org=10.0.0.1", "pypi.org=203.0.113.80", "pypi.org", "127.0.0.1=127.0.0.1", "pypi.org=::ffff:8.8.8.8"} {
		if _, err := ParseTestHosts(bad); err == nil || !strings.Contains(err.Error(), TestHostsEnv) {
			t.Errorf("ParseTestHosts(%q) = %v, want a refusal naming $%s", bad, err, TestHostsEnv)
		}
	}
	_, err = New(Config{Secret: []byte(testSecret), TestHosts: map[string][]netip.Addr{"pypi.org": {netip.MustParseAddr("192.0.2.1")}}})
	if err == nil {
		t.Error("New accepted a non-loopback test host")
	}
}

func itoaPort(p uint16) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), p).String()[len("0.0.0.0:"):]
}
