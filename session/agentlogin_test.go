package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/oauthtest"
	"github.com/git-corral/git-corral/login"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// loginConfig is a broker-mode claude configuration whose anthropic route goes to srv.
func loginConfig(srv *oauthtest.Server, agentLogin string) *policy.Config {
	cfg := policy.Default()
	cfg.Network, cfg.DefaultAgent, cfg.AgentLogin = policy.NetworkBroker, "claude", agentLogin
	cfg.Egress = []string{strings.TrimPrefix(srv.URL, "http://")}
	cfg.APIRoutes = map[string]policy.APIRoute{"anthropic": {Upstream: srv.URL}}
	return cfg
}

// saveLogin stores srv's seed (an expired access token and its refresh token) as login name.
func saveLogin(t *testing.T, h home.Home, srv *oauthtest.Server, name, agent string) {
	t.Helper()
	at, rt := srv.Seed()
	if err := login.Save(h.Dir, name, login.Record{Agent: agent, Kind: login.KindOAuth, AccessToken: at, RefreshToken: rt,
		ExpiresAt: time.Now().Add(-time.Second), TokenURL: srv.TokenURL(), ClientID: "test-client"}); err != nil {
		t.Fatal(err)
	}
}

// TestAgentLoginRoute: three boxes whose trusted configuration pins the host-held login "work"
// (agent_login) share it through their real broker children against a stand-in whose refresh
// token rotates on use and whose tokens live two seconds: 20 requests across them, in two waves
// a lifetime apart, all succeed with one refresh per wave and none refused; the stand-in saw only
// the host's tokens; no token is on a child's argv or in its environment; the box's session
// environment holds the placeholder and the route's URL. Controls: a pinned login that does not
// exist, or one made for another agent, stops the session; with agent_login = "none" the box
// gets neither.
func TestAgentLoginRoute(t *testing.T) {
	useBuiltBroker(t)
	srv := oauthtest.Start(2 * time.Second)
	defer srv.Close()
	h := home.Home{Dir: t.TempDir()}
	t.Setenv("LIMA_HOME", h.LimaHome())
	saveLogin(t, h, srv, "work", "claude")
	cfg := loginConfig(srv, "work")
	m := &vm.Manager{Home: h}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type boxEnd struct {
		port   int
		secret []byte
		pid    int
	}
	var boxes []boxEnd
	for i := range 3 {
		box := fmt.Sprintf("login-%d", i)
		if err := m.WriteMeta(vm.Meta{Box: box}); err != nil {
			t.Fatal(err)
		}
		port, err := broker.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		secret, err := ensureBroker(ctx, m, box, cfg, port, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := m.ReadMeta(box)
		defer broker.StopChild(meta.BrokerPID, box)
		boxes = append(boxes, boxEnd{port, secret, meta.BrokerPID})
	}
	placeholder := map[string]string{"Authorization": "Bearer " + LoginPlaceholder}
	var mu sync.Mutex
	failed := 0
	for wave := range 2 {
		if wave > 0 {
			time.Sleep(2100 * time.Millisecond)
		}
		var wg sync.WaitGroup
		for i := range 10 {
			b := boxes[i%3]
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, body := proxyGet(t, b.port, b.secret, "POST", "http://anthropic.api.corral/v1/messages", placeholder)
				mu.Lock()
				defer mu.Unlock()
				if code != 200 || strings.Contains(body, oauthtest.Marker) {
					failed++
				}
			}()
		}
		wg.Wait()
	}
	if st := srv.Stats(); failed != 0 || st.APIOK != 20 || st.Refreshes != 2 || st.Rejected != 0 || st.Needless != 0 {
		t.Errorf("three boxes, one login: %d of 20 failed, stand-in %+v; want 20 OK, 2 refreshes, none refused", failed, st)
	}
	for auth := range srv.AuthSeen() {
		if !strings.HasPrefix(auth, "Bearer at-"+oauthtest.Marker) {
			t.Errorf("the upstream was sent %q, not the host's token", auth)
		}
	}
	for _, b := range boxes {
		for _, f := range []string{"cmdline", "environ"} {
			if data := procFile(t, b.pid, f); strings.Contains(string(data), oauthtest.Marker) {
				t.Errorf("a token is in broker %d's %s", b.pid, f)
			}
		}
		if !strings.Contains(string(procFile(t, b.pid, "cmdline")), "--api-routes") {
			t.Errorf("broker %d was started without routes", b.pid)
		}
	}
	bx := &Box{Manager: m, Config: cfg, BrokerSecret: boxes[0].secret, BrokerPort: boxes[0].port, req: Request{}}
	vars, _, _, err := bx.env()
	if err != nil {
		t.Fatal(err)
	}
	if vars["CLAUDE_CODE_OAUTH_TOKEN"] != LoginPlaceholder || vars["ANTHROPIC_BASE_URL"] != "http://anthropic.api.corral" {
		t.Errorf("session env: CLAUDE_CODE_OAUTH_TOKEN=%q ANTHROPIC_BASE_URL=%q", vars["CLAUDE_CODE_OAUTH_TOKEN"], vars["ANTHROPIC_BASE_URL"])
	}
	for k, v := range vars {
		if strings.Contains(v, oauthtest.Marker) {
			t.Errorf("session variable %s holds a token", k)
		}
	}

	saveLogin(t, h, srv, "codexacct", "codex")
	for _, c := range []struct{ login, want string }{{"missing", "agents login claude --as missing"}, {"codexacct", "is for codex"}} {
		_, err := ensureBroker(ctx, m, "login-0", loginConfig(srv, c.login), boxes[0].port, func(string) {})
		if err == nil || !strings.Contains(err.Error()+hint.Of(err), c.want) {
			t.Errorf("agent_login = %q: %v; want an error saying %q", c.login, err, c.want)
		}
	}
	none := &Box{Manager: m, Config: loginConfig(srv, "none"), BrokerSecret: boxes[0].secret, BrokerPort: boxes[0].port}
	if vars, _, _, err := none.env(); err != nil || vars["CLAUDE_CODE_OAUTH_TOKEN"] != "" || vars["ANTHROPIC_BASE_URL"] != "" {
		t.Errorf("agent_login = \"none\": %v %v", vars, err)
	}
	if _, err := os.Stat(filepath.Join(h.Dir, "logins", "work.json")); err != nil {
		t.Fatal(err)
	}
}
