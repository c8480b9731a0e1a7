package session

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/policy"
)

const forgeTokenValue = "ghp_session-forge-token-7a2c"

// forgeUpstream stands in for api.github.com: TLS for localhost, recording each request that
// reached it with whether it carried the host's token.
type forgeUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func startForgeUpstream(t *testing.T) *forgeUpstream {
	t.Helper()
	cert, roots := localhostTLS(t)
	t.Setenv("SSL_CERT_FILE", roots)
	f := &forgeUpstream{}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		token := r.Header.Get("Authorization") == "Bearer "+forgeTokenValue || r.Header.Get("Private-Token") == forgeTokenValue
		f.seen = append(f.seen, fmt.Sprintf("%s %s token=%v %s", r.Method, r.URL.EscapedPath(), token, body))
		f.mu.Unlock()
		fmt.Fprint(w, `{"data":{}}`)
	}))
	f.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

func (f *forgeUpstream) saw(substr string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.seen, func(s string) bool { return strings.Contains(s, substr) })
}

// forgePost sends a GraphQL POST through the box's broker as gh would.
func forgePost(t *testing.T, port int, secret []byte, query string) (int, string) {
	return forgePostTo(t, port, secret, "http://github.api.corral/graphql", query)
}

// forgePostTo sends a GraphQL POST to target through the box's broker.
func forgePostTo(t *testing.T, port int, secret []byte, target, query string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"query":%q}`, query)
	return proxyDo(t, port, secret, "POST", target, map[string]string{"Content-Type": "application/json"}, strings.NewReader(body))
}

// TestForgeAPIThroughBroker: with git_tokens holding the GitHub token on the host and
// api_brokers naming the built-in github and gitlab routes (their upstream moved to a TLS
// stand-in on loopback), the real broker child started by ensureBroker lets reads through with
// the host's token (REST GET, GraphQL query, a GitLab project named by path) and refuses a
// GraphQL merge on each with a 403 naming forge_api_allow, before the stand-in sees it. Control: with forge_api_allow = ["merge"] the
// broker is restarted with the new rules and the same mutation reaches the stand-in with the
// token.
func TestForgeAPIThroughBroker(t *testing.T) {
	useBuiltBroker(t)
	up := startForgeUpstream(t)
	port := strings.TrimPrefix(up.URL, "https://127.0.0.1:")
	t.Setenv("GITHUB_TOKEN", forgeTokenValue)
	t.Setenv("GITLAB_TOKEN", forgeTokenValue)
	box := "forge-abc123"
	h, m := brokerBox(t, box)
	cfg := policy.Default()
	cfg.Network, cfg.Egress = policy.NetworkBroker, []string{"127.0.0.1:" + port, "[::1]:" + port}
	cfg.GitTokens = map[string]string{"localhost:" + port: "GITHUB_TOKEN"}
	cfg.APIBrokers = []string{"github", "gitlab"}
	cfg.APIRoutes = map[string]policy.APIRoute{"github": {Upstream: "https://localhost:" + port}, "gitlab": {Upstream: "https://localhost:" + port}}
	bport, err := broker.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secret, err := ensureBroker(ctx, m, box, cfg, bport, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { meta, _ := m.ReadMeta(box); broker.StopChild(meta.BrokerPID, box) }()

	if code, body := proxyGet(t, bport, secret, "GET", "http://github.api.corral/repos/o/r/pulls/1", nil); code != 200 || !up.saw("GET /repos/o/r/pulls/1 token=true") {
		t.Fatalf("REST read: %d %q; the stand-in saw %v", code, body, up.seen)
	}
	if code, body := forgePost(t, bport, secret, `query { viewer { login } }`); code != 200 || !up.saw("POST /graphql token=true {\"query\":\"query { viewer") {
		t.Fatalf("GraphQL read: %d %q; the stand-in saw %v", code, body, up.seen)
	}
	merge := `mutation { m: mergePullRequest(input:{pullRequestId:"P"}) { clientMutationId } }`
	code, body := forgePost(t, bport, secret, merge)
	if code != 403 || !strings.Contains(body, `forge_api_allow = ["merge"]`) || up.saw("mergePullRequest") {
		t.Errorf("GraphQL merge: %d %q; the stand-in saw %v; want 403 naming forge_api_allow and nothing upstream", code, body, up.seen)
	}
	if code, body := proxyGet(t, bport, secret, "GET", "http://gitlab.api.corral/api/v4/projects/g%2Fp/merge_requests", nil); code != 200 || !up.saw("GET /api/v4/projects/g%2Fp/merge_requests token=true") {
		t.Errorf("GitLab REST read: %d %q; the stand-in saw %v", code, body, up.seen)
	}
	accept := `mutation { mergeRequestAccept(input:{projectPath:"g/p", iid:"1"}) { errors } }`
	if code, body := forgePostTo(t, bport, secret, "http://gitlab.api.corral/api/graphql", accept); code != 403 || !strings.Contains(body, `forge_api_allow = ["merge"]`) || up.saw("mergeRequestAccept") {
		t.Errorf("GitLab GraphQL merge: %d %q; the stand-in saw %v", code, body, up.seen)
	}
	egress, _ := os.ReadFile(h.EgressLog(box))
	if !bytes.Contains(egress, []byte(`"forge":"merge"`)) || bytes.Contains(egress, []byte(forgeTokenValue)) {
		t.Errorf("the egress log lacks the refusal's class or holds the token:\n%s", egress)
	}

	cfg.ForgeAPIAllow = []string{"merge"}
	if _, err := ensureBroker(ctx, m, box, cfg, bport, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if code, body := forgePost(t, bport, secret, merge); code != 200 || !up.saw("POST /graphql token=true {\"query\":\"mutation { m: mergePullRequest") {
		t.Errorf("control, forge_api_allow = [merge]: %d %q; the stand-in saw %v", code, body, up.seen)
	}
	if code, body := forgePostTo(t, bport, secret, "http://gitlab.api.corral/api/graphql", accept); code != 200 || !up.saw("mergeRequestAccept") {
		t.Errorf("control, GitLab, forge_api_allow = [merge]: %d %q; the stand-in saw %v", code, body, up.seen)
	}
}

// TestRouteWithGitTokenNeedsForge: a route that carries a git_tokens token, by its variable or
// by the same secret under another one, fails the session unless it has forge rules; the
// error names the route, the host and the field to set. Controls: the same route with forge
// set, and one carrying an unrelated secret, pass.
func TestRouteWithGitTokenNeedsForge(t *testing.T) {
	env := map[string]string{"GH_PUSH": forgeTokenValue, "COPY": forgeTokenValue, "OTHER": "sk-other"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, c := range []struct {
		name, valueEnv, forge string
		wantErr               bool
	}{
		{"same variable", "GH_PUSH", "", true},
		{"same secret, another variable", "COPY", "", true},
		{"control: forge set", "GH_PUSH", "github", false},
		{"control: another secret", "OTHER", "", false},
	} {
		cfg := policy.Default()
		cfg.Network, cfg.GitTokens, cfg.APIBrokers = policy.NetworkBroker, map[string]string{"github.com": "GH_PUSH"}, []string{"mygh"}
		cfg.ForgeAPIAllow = []string{"write"}
		cfg.APIRoutes = map[string]policy.APIRoute{"mygh": {Upstream: "https://api.github.com", Header: "Authorization",
			ValuePrefix: "Bearer ", ValueEnv: []string{c.valueEnv}, Allow: []string{"GET /*"}, Forge: c.forge}}
		p, err := planRoutes(cfg, lookup)
		if c.wantErr {
			if err == nil || !strings.Contains(err.Error(), `api route "mygh" carries the git token of github.com`) ||
				!strings.Contains(err.Error(), "set forge (github or gitlab) in [api_routes.mygh]") {
				t.Errorf("%s: %v, want the route refused", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		i := slices.IndexFunc(p.routes, func(r broker.APIRoute) bool { return r.Name == "mygh" })
		if i < 0 || p.routes[i].Forge != c.forge || (c.forge != "" && !slices.Equal(p.routes[i].ForgeAllow, []string{"write"})) {
			t.Errorf("%s: routes %+v", c.name, p.routes)
		}
	}
	if !slices.Equal(policy.ForgeClasses, broker.ForgeClasses) || !slices.Equal(policy.ForgeKinds, broker.ForgeKinds) {
		t.Errorf("policy and broker disagree on forge classes or kinds: %v %v / %v %v", policy.ForgeClasses, policy.ForgeKinds, broker.ForgeClasses, broker.ForgeKinds)
	}
}
