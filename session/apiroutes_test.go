package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

const routeSecretValue = "sk-host-only-9f3c2e7d1b"

// keyUpstream is an API on loopback that answers 200 only to the host's credential in
// X-Api-Key, 401 otherwise, and records every credential it was sent.
type keyUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newKeyUpstream(t *testing.T) *keyUpstream {
	u := &keyUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.Path+" "+strings.Join(r.Header.Values("X-Api-Key"), "|"))
		u.mu.Unlock()
		if r.Header.Get("X-Api-Key") != routeSecretValue {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "api-ok")
	}))
	t.Cleanup(u.Close)
	return u
}

// buildCorral builds git-corral for the broker child.
func buildCorral(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds the git-corral binary")
	}
	exe := filepath.Join(t.TempDir(), "git-corral")
	if out, err := exec.Command("go", "build", "-o", exe, "../cmd/git-corral").CombinedOutput(); err != nil {
		t.Fatalf("build git-corral: %v\n%s", err, out)
	}
	return exe
}

// useBuiltBroker makes ensureBroker start the broker child from a git-corral built for the
// test, until the test ends.
func useBuiltBroker(t *testing.T) {
	t.Helper()
	exe := buildCorral(t)
	prev := brokerExe
	t.Cleanup(func() { brokerExe = prev })
	brokerExe = func() (string, error) { return exe, nil }
}

// brokerBox is a $CORRAL_HOME (and LIMA_HOME) of the test's own holding the metadata of box,
// for a real broker child.
func brokerBox(t *testing.T, box string) (home.Home, *vm.Manager) {
	t.Helper()
	h := home.Home{Dir: t.TempDir()}
	t.Setenv("LIMA_HOME", h.LimaHome())
	m := &vm.Manager{Home: h}
	if err := m.WriteMeta(vm.Meta{Box: box}); err != nil {
		t.Fatal(err)
	}
	return h, m
}

// proxyGet sends one request without a body through the box's broker as a box client would.
func proxyGet(t *testing.T, port int, secret []byte, method, target string, hdr map[string]string) (int, string) {
	t.Helper()
	return proxyDo(t, port, secret, method, target, hdr, nil)
}

// proxyDo sends one request through the box's broker as a box client would.
func proxyDo(t *testing.T, port int, secret []byte, method, target string, hdr map[string]string, body io.Reader) (int, string) {
	t.Helper()
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("corral", string(secret)), Host: fmt.Sprintf("127.0.0.1:%d", port)}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), DisableKeepAlives: true}, Timeout: 10 * time.Second}
	req, _ := http.NewRequest(method, target, body)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s through the broker: %v", method, target, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestAPIBrokerRoute: with api_brokers naming a route, the real broker child (git-corral
// broker serve, started by ensureBroker) answers the box's call to http://myapi.api.corral
// with the upstream's answer to the host's credential, which the box never sent; the
// credential is in no file under $CORRAL_HOME, not on the child's argv or in its environment,
// not in the egress log and not in the session environment. Controls: the same upstream
// refuses the box's own guess (401, through the same broker), and once the route is removed
// the broker is restarted and the same call is refused.
func TestAPIBrokerRoute(t *testing.T) {
	useBuiltBroker(t)
	up := newKeyUpstream(t)
	upHost := strings.TrimPrefix(up.URL, "http://")
	t.Setenv("CORRAL_TEST_API_KEY", routeSecretValue)
	box := "api-abc123"
	h, m := brokerBox(t, box)
	envFile := filepath.Join(t.TempDir(), "env")
	os.WriteFile(envFile, []byte("COPIED="+routeSecretValue+"\nPLAIN=1\n"), 0o600)
	cfg := policy.Default()
	cfg.Network, cfg.Egress, cfg.APIBrokers = policy.NetworkBroker, []string{upHost}, []string{"myapi"}
	cfg.APIRoutes = map[string]policy.APIRoute{"myapi": {Upstream: up.URL + "/v1", Header: "X-Api-Key",
		ValueEnv: []string{"CORRAL_TEST_API_KEY"}, Allow: []string{"GET /items/*"}, BaseURLEnv: "MYAPI_BASE"}}
	cfg.ForwardEnv, cfg.EnvFromHost, cfg.EnvFile = []string{"CORRAL_TEST_API_KEY"}, map[string]string{"G": "CORRAL_TEST_API_KEY"}, envFile
	port, err := broker.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secret, err := ensureBroker(ctx, m, box, cfg, port, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := m.ReadMeta(box)
	defer func() { meta, _ := m.ReadMeta(box); broker.StopChild(meta.BrokerPID, box) }()

	guess := map[string]string{"X-Api-Key": RoutePlaceholder}
	if code, body := proxyGet(t, port, secret, "GET", "http://myapi.api.corral/items/1", guess); code != 200 || body != "api-ok" {
		t.Fatalf("route call: %d %q, want 200 from the upstream", code, body)
	}
	if code, _ := proxyGet(t, port, secret, "GET", up.URL+"/v1/items/1", guess); code != 401 {
		t.Errorf("control: the box's own request to the upstream: %d, want 401 (the upstream wants the host's key)", code)
	}
	if code, _ := proxyGet(t, port, secret, "DELETE", "http://myapi.api.corral/items/1", nil); code != 405 {
		t.Errorf("a method the route does not allow: %d, want 405", code)
	}
	up.mu.Lock()
	seen := strings.Join(up.seen, "\n")
	up.mu.Unlock()
	if !strings.HasPrefix(seen, "GET /v1/items/1 "+routeSecretValue+"\n") || strings.Count(seen, routeSecretValue) != 1 {
		t.Errorf("upstream saw:\n%s\nwant the route call with the host's key, once, and the control without it", seen)
	}

	noSecret(t, "the broker child's argv", procFile(t, meta.BrokerPID, "cmdline"))
	noSecret(t, "the broker child's environment", procFile(t, meta.BrokerPID, "environ"))
	filepath.WalkDir(h.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			noSecret(t, p, data)
		}
		return nil
	})
	egress, _ := os.ReadFile(h.EgressLog(box))
	if !bytes.Contains(egress, []byte(`"route":"myapi"`)) {
		t.Errorf("the egress log has no line for the route call:\n%s", egress)
	}

	b := &Box{Config: cfg, BrokerSecret: secret, BrokerPort: port}
	vars, _, _, err := envWith(b, []string{"CORRAL_TEST_API_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range vars {
		noSecret(t, "session variable "+k, []byte(v))
	}
	if vars["MYAPI_BASE"] != "http://myapi.api.corral" || vars["PLAIN"] != "1" {
		t.Errorf("session env: MYAPI_BASE=%q PLAIN=%q; want the route's URL, and unrelated values kept", vars["MYAPI_BASE"], vars["PLAIN"])
	}

	// Control: the same call without the route. The child is restarted (its routes changed)
	// and refuses it.
	cfg.APIBrokers = nil
	if _, err := ensureBroker(ctx, m, box, cfg, port, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if code, _ := proxyGet(t, port, secret, "GET", "http://myapi.api.corral/items/1", guess); code == 200 {
		t.Error("without the route the call still succeeded")
	}
}

func procFile(t *testing.T, pid int, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil || len(data) == 0 {
		t.Fatalf("read /proc/%d/%s: %v", pid, name, err)
	}
	return data
}

func noSecret(t *testing.T, where string, data []byte) {
	t.Helper()
	if bytes.Contains(data, []byte(routeSecretValue)) {
		t.Errorf("the route's credential is in %s", where)
	}
}

// TestRouteWithholdsEverySource is the table of ways a configuration could carry a route's
// credential into the box: each is left out of AssembleEnv and named in Dropped. The control
// row, with no route, carries the same value (so each row would fail if withholding broke).
func TestRouteWithholdsEverySource(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", routeSecretValue)
	envFile := filepath.Join(t.TempDir(), "env")
	os.WriteFile(envFile, []byte("RENAMED="+routeSecretValue+"\n"), 0o600)
	cases := []struct {
		name  string
		set   func(c *policy.Config)
		names []string
		drop  string // a phrase of Dropped
	}{
		{"forward_env", func(c *policy.Config) { c.ForwardEnv = []string{"ANTHROPIC_API_KEY"} }, nil, "ANTHROPIC_API_KEY (held on the host"},
		{"--env", func(c *policy.Config) {}, []string{"ANTHROPIC_API_KEY"}, "ANTHROPIC_API_KEY (held on the host"},
		{"env_from_host", func(c *policy.Config) { c.EnvFromHost = map[string]string{"KEY": "ANTHROPIC_API_KEY"} }, nil, "KEY (held on the host"},
		{"git_tokens", func(c *policy.Config) { c.GitTokens = map[string]string{"github.com": "ANTHROPIC_API_KEY"} }, nil, "git token for github.com"},
		{"env_file", func(c *policy.Config) { c.EnvFile = envFile }, nil, "RENAMED (holds the secret"},
		{"literal env", func(c *policy.Config) { c.Env = map[string]string{"LIT": "x" + routeSecretValue} }, nil, "LIT (holds the secret"},
	}
	for _, c := range cases {
		for _, routed := range []bool{true, false} {
			cfg := policy.Default()
			cfg.Network = policy.NetworkBroker
			c.set(cfg)
			if !routed && c.name == "git_tokens" {
				// In broker mode every git_tokens host is a git route (gitroutes.go): the
				// token reaches the box only in full mode, where this row's control runs.
				cfg.Network = policy.NetworkFull
			}
			if routed {
				cfg.APIBrokers = []string{"anthropic"}
			}
			if routed && c.name == "git_tokens" {
				// A route carrying a git_tokens token must be a forge route
				// (TestRouteWithGitTokenNeedsForge): here the github route holds the variable.
				cfg.APIBrokers = []string{"github"}
				cfg.APIRoutes = map[string]policy.APIRoute{"github": {ValueEnv: []string{"ANTHROPIC_API_KEY"}}}
			}
			e, err := AssembleEnv(cfg, c.names)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			leaked := false
			for _, v := range e.Values {
				leaked = leaked || strings.Contains(v, routeSecretValue)
			}
			if routed && (leaked || !strings.Contains(strings.Join(e.Dropped, "\n"), c.drop)) {
				t.Errorf("%s: leaked %v, dropped %q; want it left out as %q", c.name, leaked, e.Dropped, c.drop)
			}
			if !routed && !leaked {
				t.Errorf("%s control: without a route the value was not passed either: the row proves nothing", c.name)
			}
		}
	}
}

// TestRouteSecretUnset: in broker mode a route whose host variable is unset fails the session,
// naming the route and the variable; in full mode (no broker, no route) it does not, and the
// variable is still withheld.
func TestRouteSecretUnset(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "")
	os.Unsetenv("GITHUB_TOKEN")
	os.Unsetenv("GH_TOKEN")
	cfg := policy.Default()
	cfg.Network, cfg.APIBrokers = policy.NetworkBroker, []string{"github"}
	_, err := AssembleEnv(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), `api route "github"`) || !strings.Contains(err.Error(), "GITHUB_TOKEN or GH_TOKEN") {
		t.Errorf("broker mode, token unset: %v", err)
	}
	cfg.Network = policy.NetworkFull
	if _, err := AssembleEnv(cfg, nil); err != nil {
		t.Errorf("full mode: %v", err)
	}
}

// TestRouteBoxEnv: a built-in route points the agent at the route and gives it a placeholder
// key; the box's proxy settings cannot be replaced by a route's variable.
func TestRouteBoxEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", routeSecretValue)
	t.Setenv("CORRAL_TEST_K", "k")
	cfg := policy.Default()
	cfg.Network, cfg.APIBrokers = policy.NetworkBroker, []string{"anthropic", "evil"}
	cfg.APIRoutes = map[string]policy.APIRoute{"evil": {Upstream: "https://e.example", Header: "A", ValueEnv: []string{"CORRAL_TEST_K"},
		Allow: []string{"GET /*"}, BaseURLEnv: "HTTPS_PROXY"}}
	b := &Box{Config: cfg, BrokerSecret: []byte("0123456789abcdef0123456789abcdef"), BrokerPort: 18080}
	vars, _, _, err := envWith(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if vars["ANTHROPIC_BASE_URL"] != "http://anthropic.api.corral" || vars["ANTHROPIC_API_KEY"] != RoutePlaceholder {
		t.Errorf("anthropic: base %q key %q", vars["ANTHROPIC_BASE_URL"], vars["ANTHROPIC_API_KEY"])
	}
	if !strings.Contains(vars["HTTPS_PROXY"], "@192.168.5.2:18080") {
		t.Errorf("a route's base_url_env replaced the proxy: HTTPS_PROXY=%q", vars["HTTPS_PROXY"])
	}
}

// TestBrokerFollowsNarrowedEgress: a broker child started with an allow-list is restarted when
// the allow-list changes, so a destination removed from egress is refused from the next session
// on; the control, the same allow-list again, keeps the running child (same PID) and the
// destination still answers through it.
func TestBrokerFollowsNarrowedEgress(t *testing.T) {
	useBuiltBroker(t)
	up := newKeyUpstream(t)
	upHost := strings.TrimPrefix(up.URL, "http://")
	box := "egress-abc123"
	_, m := brokerBox(t, box)
	port, err := broker.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer func() { meta, _ := m.ReadMeta(box); broker.StopChild(meta.BrokerPID, box) }()
	cfg := policy.Default()
	cfg.Network, cfg.Egress = policy.NetworkBroker, []string{upHost, "example.invalid"}
	start := func() (int, []byte, []string) {
		t.Helper()
		var notices []string
		secret, err := ensureBroker(ctx, m, box, cfg, port, func(s string) { notices = append(notices, s) })
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := m.ReadMeta(box)
		return meta.BrokerPID, secret, notices
	}
	target := up.URL + "/v1/items/1"
	pid1, secret, _ := start()
	if code, _ := proxyGet(t, port, secret, "GET", target, nil); code == 403 {
		t.Fatalf("an allowed destination: %d from the broker, want the upstream's answer", code)
	}
	pid2, secret, notices := start() // control: nothing changed
	if pid2 != pid1 || len(notices) != 0 {
		t.Fatalf("the same allow-list restarted the broker (pid %d → %d, %q)", pid1, pid2, notices)
	}
	if code, _ := proxyGet(t, port, secret, "GET", target, nil); code == 403 {
		t.Fatalf("control: the allowed destination through the same broker: %d", code)
	}
	cfg.Egress = []string{"example.invalid"}
	pid3, secret, notices := start()
	if pid3 == pid1 || !slices.ContainsFunc(notices, func(s string) bool { return strings.Contains(s, "egress allow-list") }) {
		t.Fatalf("a narrowed allow-list kept the broker (pid %d → %d, notices %q)", pid1, pid3, notices)
	}
	if code, _ := proxyGet(t, port, secret, "GET", target, nil); code != 403 {
		t.Fatalf("the destination removed from egress: %d, want 403 from the broker", code)
	}
}
