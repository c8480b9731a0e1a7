package broker

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/oauthtest"
	"github.com/git-corral/git-corral/login"
)

// boxPlaceholder is what the box holds instead of the login's token.
const boxPlaceholder = "Bearer corral-host-held-login"

// loginBrokers starts n brokers whose "claude" route uses a host-held login against srv; with
// shared they use one login file (one store), otherwise each its own copy of it, as if the
// login had been copied into every box.
func loginBrokers(t *testing.T, srv *oauthtest.Server, n int, shared bool) ([]*testBroker, string) {
	t.Helper()
	ap := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))
	at, rt := srv.Seed()
	rec := login.Record{Agent: "claude", Kind: login.KindOAuth, AccessToken: at, RefreshToken: rt,
		ExpiresAt: time.Now().Add(-time.Second), TokenURL: srv.TokenURL(), ClientID: "test-client"}
	home := t.TempDir()
	var out []*testBroker
	for i := range n {
		name := "claude"
		if !shared {
			name = fmt.Sprintf("copy-%d", i)
		}
		if i == 0 || !shared {
			if err := login.Save(home, name, rec); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, startBroker(t, []string{ap.String()}, fakeResolver{"api.example": {ap.Addr()}}, nil, func(c *Config) {
			c.APIRoutes = []APIRoute{{Name: "claude", Upstream: fmt.Sprintf("http://api.example:%d", ap.Port()),
				Header: "Authorization", Value: "Bearer ", Login: login.Path(home, name), Allow: []string{"POST /v1/messages"}}}
			c.Login = login.Options{Skew: 200 * time.Millisecond}
		}))
	}
	return out, home
}

// boxRequest is one request of the box's agent through tb: it sends only the placeholder. It
// returns the status and everything the box received.
func boxRequest(tb *testBroker) (int, string, error) {
	c, err := net.DialTimeout("tcp", tb.addr, 5*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	body := `{"model":"x","messages":[]}`
	fmt.Fprintf(c, "POST http://claude.api.corral/v1/messages HTTP/1.1\r\nHost: claude.api.corral\r\nAuthorization: %s\r\nContent-Length: %d\r\n%s\r\n%s",
		boxPlaceholder, len(body), authHeader, body)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	var sb strings.Builder
	resp.Header.Write(&sb)
	return resp.StatusCode, sb.String() + string(got), nil
}

// loginWaves sends waves of requests, each wave spread over every broker at once, sleeping a
// token lifetime between waves; it returns how many requests failed and everything the box
// side received.
func loginWaves(t *testing.T, brokers []*testBroker, waves, perBroker int, gap time.Duration) (failed int, seen string) {
	t.Helper()
	var mu sync.Mutex
	var all strings.Builder
	for w := range waves {
		if w > 0 {
			time.Sleep(gap)
		}
		var wg sync.WaitGroup
		for _, tb := range brokers {
			for range perBroker {
				wg.Add(1)
				go func() {
					defer wg.Done()
					status, got, err := boxRequest(tb)
					mu.Lock()
					defer mu.Unlock()
					all.WriteString(got)
					if err != nil || status != 200 {
						failed++
					}
				}()
			}
		}
		wg.Wait()
	}
	return failed, all.String()
}

// TestLoginRouteSharedByBrokers: three brokers (one per box) share one host-held login against
// a provider whose refresh token rotates on use and whose tokens live a second; 20 requests
// through each, in four waves a token lifetime apart, all succeed with exactly one refresh per
// wave and none refused; the upstream saw only the host's tokens, the box side only ever sent
// the placeholder and never received a token, and no egress log holds one. Control: the same
// login copied to each broker (no shared store, no shared lock) has its refresh refused and
// requests fail.
func TestLoginRouteSharedByBrokers(t *testing.T) {
	srv := oauthtest.Start(time.Second)
	defer srv.Close()
	brokers, _ := loginBrokers(t, srv, 3, true)
	failed, seen := loginWaves(t, brokers, 4, 5, 1100*time.Millisecond)
	st := srv.Stats()
	if failed != 0 || st.APIOK != 60 || st.Refreshes != 4 || st.Rejected != 0 || st.Needless != 0 || st.APIUnauthorized != 0 {
		t.Errorf("shared login: %d of 60 failed; stand-in %+v; want 60 OK, 4 refreshes, none refused or needless", failed, st)
	}
	for auth := range srv.AuthSeen() {
		if !strings.HasPrefix(auth, "Bearer at-"+oauthtest.Marker) {
			t.Errorf("the upstream was sent %q, not the host's token", auth)
		}
	}
	if strings.Contains(seen, oauthtest.Marker) {
		t.Error("the box side received a host-held token")
	}
	for _, tb := range brokers {
		data, _ := os.ReadFile(tb.logPath)
		if strings.Contains(string(data), oauthtest.Marker) || !strings.Contains(string(data), `"route":"claude"`) {
			t.Errorf("egress log %s holds a token or no route line", tb.logPath)
		}
	}

	ctl := oauthtest.Start(time.Second)
	defer ctl.Close()
	copies, _ := loginBrokers(t, ctl, 3, false)
	failed, _ = loginWaves(t, copies, 1, 5, 0)
	if cst := ctl.Stats(); cst.Rejected == 0 || failed == 0 {
		t.Errorf("control, a copy of the login per broker: %d failed, stand-in %+v; want refused refreshes", failed, cst)
	}
}

// TestLoginRoute401MarksStale: when the upstream refuses the login's token (revoked early),
// the broker relays the 401 and the next request refreshes and succeeds. Control: the token
// the broker holds is accepted, so the first request alone succeeds without a refresh.
func TestLoginRoute401MarksStale(t *testing.T) {
	srv := oauthtest.Start(time.Hour)
	defer srv.Close()
	brokers, _ := loginBrokers(t, srv, 1, true)
	tb := brokers[0]
	if status, _, err := boxRequest(tb); err != nil || status != 200 || srv.Stats().Refreshes != 1 {
		t.Fatalf("first request: %d %v %+v", status, err, srv.Stats())
	}
	if status, _, err := boxRequest(tb); err != nil || status != 200 || srv.Stats().Refreshes != 1 {
		t.Fatalf("control, a valid token is reused: %d %v %+v", status, err, srv.Stats())
	}
	srv.Revoke()
	if status, _, _ := boxRequest(tb); status != 401 {
		t.Errorf("revoked token: status %d, want the upstream's 401", status)
	}
	if status, _, err := boxRequest(tb); err != nil || status != 200 || srv.Stats().Refreshes != 2 || srv.Stats().Rejected != 0 {
		t.Errorf("after a 401: %d %v %+v; want a refresh and success", status, err, srv.Stats())
	}
}

// TestLoginRouteUnusable: a route whose login file is missing answers 502 and sends nothing
// upstream.
func TestLoginRouteUnusable(t *testing.T) {
	srv := oauthtest.Start(time.Hour)
	defer srv.Close()
	brokers, home := loginBrokers(t, srv, 1, true)
	if _, err := login.Remove(home, "claude"); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := boxRequest(brokers[0]); status != 502 || srv.Stats().APIOK+srv.Stats().APIUnauthorized != 0 {
		t.Errorf("missing login: status %d, stand-in %+v", status, srv.Stats())
	}
}
