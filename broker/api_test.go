package broker

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/git-corral/git-corral/login"
)

const apiToken = "ghp_host-only-token-never-in-the-box"

// TestAPIRoute: allowed method+path requests reach the upstream over TLS with the host's
// credential (replacing any the box sent); everything else gets 405; method, path, route and
// status are logged and the token never is.
func TestAPIRoute(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		fmt.Fprintf(w, "api %s %s", r.Method, r.URL.RequestURI())
	}))
	defer srv.Close()
	ap := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "https://"))
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tb := startBroker(t, []string{fmt.Sprintf("127.0.0.1:%d", ap.Port())},
		fakeResolver{"example.com": {ap.Addr()}}, nil, func(c *Config) {
			c.APIRoutes = []APIRoute{{
				Name: "gh", Upstream: fmt.Sprintf("https://example.com:%d/v3", ap.Port()), Header: "Authorization",
				Value: "Bearer " + apiToken, Allow: []string{"GET /repos/*", "POST /graphql"}, RootCAs: roots,
			}}
		})
	req := func(method, uri string) int {
		resp, _, _ := tb.roundTrip(t, method+" "+uri+" HTTP/1.1\r\nAuthorization: Bearer box-guess\r\nContent-Length: 0\r\n"+authHeader+"\r\n")
		io.ReadAll(resp.Body)
		return resp.StatusCode
	}
	cases := []struct {
		method, uri string
		want        int
	}{
		{"GET", "http://gh.api.corral/repos/o/r?x=1", 200},
		{"POST", "http://gh.api.corral/graphql", 200},
		{"POST", "http://gh.api.corral/repos/o/r", 405},
		{"GET", "http://gh.api.corral/admin", 405},
		{"GET", "http://gh.api.corral/repos", 405},
		{"GET", "http://gh.api.corral/repos/../admin", 405},
		{"GET", "http://gh.api.corral/repos/o//r", 405},
		{"GET", "http://gh.api.corral/repos%2F..%2Fadmin", 405},
		{"GET", "http://gh.api.corral:8080/repos/o/r", 405},
		{"GET", "http://other.api.corral/repos/o/r", 403},
	}
	for _, c := range cases {
		if got := req(c.method, c.uri); got != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.uri, got, c.want)
		}
	}
	mu.Lock()
	if len(seen) != 2 || seen[0].URL.RequestURI() != "/v3/repos/o/r?x=1" || seen[0].Header.Get("Authorization") != "Bearer "+apiToken ||
		len(seen[0].Header.Values("Authorization")) != 1 || seen[0].Header.Get("Proxy-Authorization") != "" {
		t.Errorf("upstream saw %d requests: %+v", len(seen), seen)
	}
	mu.Unlock()
	// A line is written when its request ends, which can trail the answer the client read:
	// find the lines by content, not position.
	// The refused ":8080" request has the same method and path as the allowed one: the port
	// tells them apart.
	find := func(method, path string) *Entry {
		for _, e := range tb.waitEntries(t, len(cases)) {
			if e.Method == method && e.Path == path && e.Port != 8080 {
				return &e
			}
		}
		t.Fatalf("no log line for %s %s", method, path)
		return nil
	}
	if e := find("GET", "/repos/o/r"); e.Route != "gh" || e.Status != 200 || e.Decision != Allow {
		t.Errorf("allowed request logged as %+v", e)
	}
	if e := find("POST", "/repos/o/r"); e.Route != "gh" || e.Status != 405 || e.Decision != Deny {
		t.Errorf("refused request logged as %+v", e)
	}
	data, _ := os.ReadFile(tb.logPath)
	if strings.Contains(string(data), apiToken) || strings.Contains(string(data), "x=1") {
		t.Error("the egress log holds the token or a query string")
	}
}

// TestAPIRouteForbiddenUpstream: a route's upstream is held to the address rules too.
func TestAPIRouteForbiddenUpstream(t *testing.T) {
	tb := startBroker(t, nil, fakeResolver{"meta.example": {netip.MustParseAddr("169.254.169.254")}}, nil, func(c *Config) {
		c.APIRoutes = []APIRoute{{Name: "m", Upstream: "http://meta.example", Header: "X-Key", Value: "k", Allow: []string{"GET /*"}}}
	})
	resp, _, _ := tb.roundTrip(t, "GET http://m.api.corral/latest HTTP/1.1\r\n"+authHeader+"\r\n")
	if resp.StatusCode != 403 || len(tb.dials.addrs()) != 0 {
		t.Errorf("status %d, dialled %v", resp.StatusCode, tb.dials.addrs())
	}
}

func TestAPIRouteConfigErrors(t *testing.T) {
	bad := []APIRoute{
		{Name: "Bad", Upstream: "https://x.example", Header: "A", Value: "v", Allow: []string{"GET /*"}},
		{Name: "a", Upstream: "ftp://x.example", Header: "A", Value: "v", Allow: []string{"GET /*"}},
		{Name: "a", Upstream: "https://x.example", Header: "A", Value: "v\r\nX-Evil: 1", Allow: []string{"GET /*"}},
		{Name: "a", Upstream: "https://x.example", Header: "A B", Value: "v", Allow: []string{"GET /*"}},
		{Name: "a", Upstream: "https://x.example", Header: "A", Value: "v"},
		{Name: "a", Upstream: "https://x.example", Header: "A", Value: "v", Allow: []string{"get /x"}},
		{Name: "a", Upstream: "https://u:p@x.example", Header: "A", Value: "v", Allow: []string{"GET /x"}},
	}
	for i, r := range bad {
		if _, err := parseRoutes([]APIRoute{r}, login.Options{}); err == nil {
			t.Errorf("route %d accepted: %+v", i, r)
		}
	}
}
