package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const goodRoute = `[api_routes.myapi]
upstream = "http://127.0.0.1:8443/v1"
header = "Authorization"
value_prefix = "Bearer "
value_env = "MYAPI_TOKEN"
allow = ["GET /items/*", "POST /items"]
base_url_env = "MYAPI_BASE"
`

// TestAPIRoutesLoad: a trusted [api_routes.NAME] table and api_brokers naming it load, every
// field with its file:line origin; a built-in route named by api_brokers needs no table, and a
// table with a built-in's name changes only the fields it sets.
func TestAPIRoutesLoad(t *testing.T) {
	f := newFixture(t)
	file := f.project(goodRoute + "\n[api_routes.anthropic]\nvalue_env = \"WORK_ANTHROPIC_KEY\"\n")
	f.global(`api_brokers = ["myapi", "anthropic", "github"]` + "\n")
	eff := f.mustLoad()
	r, ok := eff.Config.Route("myapi")
	want := APIRoute{Upstream: "http://127.0.0.1:8443/v1", Header: "Authorization", ValuePrefix: "Bearer ",
		ValueEnv: []string{"MYAPI_TOKEN"}, Allow: []string{"GET /items/*", "POST /items"}, BaseURLEnv: "MYAPI_BASE"}
	if !ok || fmt.Sprint(r) != fmt.Sprint(want) {
		t.Errorf("route myapi = %+v, want %+v", r, want)
	}
	a, _ := eff.Config.Route("anthropic")
	if a.Upstream != "https://api.anthropic.com" || !slices.Equal(a.ValueEnv, []string{"WORK_ANTHROPIC_KEY"}) || a.BaseURLEnv != "ANTHROPIC_BASE_URL" {
		t.Errorf("anthropic with value_env changed = %+v", a)
	}
	if got := eff.Origins["api_routes.myapi.upstream"].String(); got != file+":2" {
		t.Errorf("origin of upstream = %q, want %q", got, file+":2")
	}
	var keys []string
	for _, s := range eff.Settings() {
		if strings.HasPrefix(s.Key, "api_routes.") {
			keys = append(keys, s.Key)
		}
	}
	if !slices.Contains(keys, "api_routes.myapi.allow") || !slices.Contains(keys, "api_routes.anthropic.value_env") {
		t.Errorf("config settings list %v", keys)
	}
}

// TestAPIRoutesRefused is the table of hostile and broken route configuration: each is refused
// naming the key as written (and its line), from the repository in any spelling, and from a
// trusted file when malformed. The control is TestAPIRoutesLoad: the same shapes, well formed
// in a trusted file, load.
func TestAPIRoutesRefused(t *testing.T) {
	kelvin := "\u212a"
	cases := []struct {
		name      string
		repo      bool // in the repository's .corral.toml, else the trusted project file
		toml, key string
		problem   string
	}{
		{"repo table", true, goodRoute, "api_routes.myapi", "may not be set by the repository"},
		{"repo dotted", true, `api_routes.x.upstream = "https://evil.example"`, "api_routes.x.upstream", "may not be set"},
		{"repo inline", true, `api_routes = { x = { upstream = "https://evil.example" } }`, "api_routes", "may not be set"},
		{"repo escaped", true, `"api_route\u0073".x.header = "A"`, `"api_route\u0073".x.header`, "may not be set"},
		{"repo upper", true, "[API_ROUTES.x]\nheader = \"A\"", "API_ROUTES.x", "only by case"},
		{"repo kelvin", true, "[\"api_routes\".\"" + kelvin + "\"]\nheader = \"A\"", "\"api_routes\".\"" + kelvin + "\"", "may not be set"},
		{"repo brokers", true, `api_brokers = ["anthropic"]`, "api_brokers", "may not be set"},
		{"unknown field", false, "[api_routes.x]\nvalue = \"sk-secret\"", "api_routes.x.value", "is not a key of an [api_routes.NAME] table"},
		{"field case", false, "[api_routes.x]\nUpstream = \"https://a.example\"", "api_routes.x.Upstream", "only by case"},
		{"bad name", false, "[api_routes.Evil]\nheader = \"A\"", "api_routes.Evil", "route name"},
		{"dotted name", false, "[api_routes.\"a.b\"]\nheader = \"A\"", `api_routes."a.b"`, "route name"},
		{"scalar route", false, `api_routes.x = "https://a.example"`, "api_routes.x", "must be [api_routes.NAME] tables"},
		{"array tables", false, "[[api_routes.x]]\nheader = \"A\"", "api_routes.x", "array of tables"},
		{"upstream ftp", false, "[api_routes.x]\nupstream = \"ftp://a.example\"", "api_routes.x.upstream", "http(s) URL"},
		{"upstream user", false, "[api_routes.x]\nupstream = \"https://u:p@a.example\"", "api_routes.x.upstream", "http(s) URL"},
		{"upstream query", false, "[api_routes.x]\nupstream = \"https://a.example/?k=v\"", "api_routes.x.upstream", "http(s) URL"},
		{"header host", false, "[api_routes.x]\nheader = \"Host\"", "api_routes.x.header", "header name"},
		{"header proxy", false, "[api_routes.x]\nheader = \"Proxy-Authorization\"", "api_routes.x.header", "header name"},
		{"header crlf", false, "[api_routes.x]\nheader = \"A\\r\\nX-Evil: 1\"", "api_routes.x.header", "header name"},
		{"prefix newline", false, "[api_routes.x]\nvalue_prefix = \"Bearer\\n\"", "api_routes.x.value_prefix", "printable"},
		{"value_env not a name", false, "[api_routes.x]\nvalue_env = \"sk-ant-123\"", "api_routes.x.value_env", "variable name"},
		{"value_env array", false, "[api_routes.x]\nvalue_env = [\"A\"]", "api_routes.x.value_env", "must be a string"},
		{"allow lower", false, "[api_routes.x]\nallow = [\"get /x\"]", "api_routes.x.allow", "allow pattern"},
		{"allow dotdot", false, "[api_routes.x]\nallow = [\"GET /a/../b\"]", "api_routes.x.allow", "allow pattern"},
		{"allow encoded", false, "[api_routes.x]\nallow = [\"GET /a%2Fb\"]", "api_routes.x.allow", "allow pattern"},
		{"unknown broker", false, `api_brokers = ["nosuch"]`, "api_brokers", "neither built in"},
		{"incomplete route", false, "api_brokers = [\"x\"]\n[api_routes.x]\nheader = \"A\"", "api_brokers", "lacks upstream"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantViolation(t, c.toml, c.repo, c.key, c.problem) })
	}
}

// TestAPIRoutesEveryViolation: every bad field of every route is reported at once, each at
// its own line.
func TestAPIRoutesEveryViolation(t *testing.T) {
	f := newFixture(t)
	f.project("[api_routes.a]\nvalue = \"sk-1\"\nupstream = \"ftp://x.example\"\n[api_routes.b]\nUpstream = \"https://b.example\"\n")
	vs := f.violations()
	var got []string
	for _, v := range vs {
		got = append(got, fmt.Sprintf("%d %s", v.Line, v.Key))
	}
	if strings.Join(got, ",") != "2 api_routes.a.value,3 api_routes.a.upstream,5 api_routes.b.Upstream" {
		t.Errorf("violations %v, want all three", got)
	}
}

// TestAgentHostsJoinEgress: in broker mode the agent's API hosts join egress with the origin
// "agent NAME"; in full mode, or with no agent, they do not (the controls).
func TestAgentHostsJoinEgress(t *testing.T) {
	hosts := func(agent string) []string {
		if agent == "claude" {
			return []string{"api.anthropic.com", "statsig.example.com"}
		}
		return nil
	}
	cases := []struct {
		name, toml string
		want       []string
	}{
		{"broker", "network = \"broker\"\ndefault_agent = \"/usr/local/bin/claude --model x\"\negress = [\"statsig.example.com\"]", []string{"statsig.example.com", "api.anthropic.com"}},
		{"full", "network = \"full\"\ndefault_agent = \"claude\"", nil},
		{"no agent", "network = \"broker\"", nil},
		{"other agent", "network = \"broker\"\ndefault_agent = \"bash\"", nil},
	}
	for _, c := range cases {
		f := newFixture(t)
		f.project(c.toml + "\negress_presets = []") // the presets' hosts are TestEgressPresets'
		eff, err := Load(t.Context(), LoadOptions{Home: f.home, TopLevel: f.top, Box: testBox, Host: testHost, AgentHosts: hosts})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(eff.Config.Egress, c.want) {
			t.Errorf("%s: egress %v, want %v", c.name, eff.Config.Egress, c.want)
		}
		if len(c.want) == 2 {
			if o := eff.Origins["egress[1]"].String(); o != "agent claude" {
				t.Errorf("%s: origin of the agent's host = %q", c.name, o)
			}
			if o := eff.Origins["egress[0]"]; o.Layer != LayerHostProject {
				t.Errorf("%s: a host the trusted layer allows keeps its origin, got %v", c.name, o)
			}
		}
	}
}

// TestForgeAPIAllow: forge_api_allow loads from a trusted file with its origin, and the forge
// field of a route loads and overrides; a bad class, a bad forge, and the key in the
// repository's file are each refused naming the file, line, key and value. The built-in
// github route is a forge route that allows GraphQL reads.
func TestForgeAPIAllow(t *testing.T) {
	f := newFixture(t)
	file := f.project("forge_api_allow = [\"write\", \"merge\"]\n[api_routes.ghes]\nupstream = \"https://ghe.example/api/v3\"\nheader = \"Authorization\"\nvalue_env = \"GHES_TOKEN\"\nallow = [\"GET /*\"]\nforge = \"github\"\n")
	eff := f.mustLoad()
	if !slices.Equal(eff.Config.ForgeAPIAllow, []string{"write", "merge"}) || eff.Origins["forge_api_allow[0]"].String() != file+":1" {
		t.Errorf("forge_api_allow = %v from %v", eff.Config.ForgeAPIAllow, eff.Origins["forge_api_allow[0]"])
	}
	if r, _ := eff.Config.Route("ghes"); r.Forge != "github" || eff.Origins["api_routes.ghes.forge"].String() != file+":7" {
		t.Errorf("route ghes = %+v from %v", r, eff.Origins["api_routes.ghes.forge"])
	}
	if gh, _ := eff.Config.Route("github"); gh.Forge != "github" || !slices.Contains(gh.Allow, "POST /graphql") || slices.Contains(gh.Allow, "POST /*") {
		t.Errorf("built-in github = %+v", gh)
	}
	if gl, _ := eff.Config.Route("gitlab"); gl.Forge != "gitlab" || !slices.Equal(gl.Allow, []string{"GET /api/v4/*", "POST /api/graphql"}) {
		t.Errorf("built-in gitlab = %+v", gl)
	}
	for _, c := range []struct {
		name, toml, key, problem string
		repo                     bool
	}{
		{"unknown class", "forge_api_allow = [\"merge\", \"admin\"]", "forge_api_allow", `has the class "admin"; want one of merge, push, protection, write`, false},
		{"read is not a class", "forge_api_allow = [\"read\"]", "forge_api_allow", `has the class "read"`, false},
		{"repository", "forge_api_allow = [\"merge\"]", "forge_api_allow", "may not be set by the repository", true},
		{"unknown forge", "[api_routes.x]\nforge = \"gitea\"", "api_routes.x.forge", `(github, gitlab), not "gitea"`, false},
	} {
		t.Run(c.name, func(t *testing.T) { wantViolation(t, c.toml, c.repo, c.key, c.problem) })
	}
}

// wantViolation loads toml as the per-project file (repo: the repository's) and fails unless
// the load reports a violation of key at a line of that file whose problem holds problem.
func wantViolation(t *testing.T, toml string, repo bool, key, problem string) {
	t.Helper()
	f := newFixture(t)
	file := f.project(toml)
	if repo {
		file = f.repo(toml)
	}
	vs := f.violations()
	for _, v := range vs {
		if v.Key == key && v.File == file && v.Line > 0 && strings.Contains(v.Problem, problem) {
			return
		}
	}
	t.Errorf("no violation of %q at %s:N with %q; got %v", key, file, problem, vs)
}
