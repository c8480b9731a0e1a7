package broker

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/git-corral/git-corral/login"
)

const forgeToken = "ghp_forge-token-held-on-the-host"

// fakeForge is a forge's API over TLS on loopback: the upstream boundary. It records every
// request that reached it (method, URI, credential, body, probe id) and answers 200.
type fakeForge struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []forgeSeen
}

type forgeSeen struct{ method, uri, auth, probe, body string }

func startFakeForge(t *testing.T) *fakeForge {
	t.Helper()
	f := &fakeForge{}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, forgeSeen{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("X-Probe"), string(body)})
		f.mu.Unlock()
		fmt.Fprintf(w, `{"ok":true}`)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// got returns what reached the forge for one probe id.
func (f *fakeForge) got(probe string) []forgeSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []forgeSeen
	for _, s := range f.seen {
		if s.probe == probe {
			out = append(out, s)
		}
	}
	return out
}

// forgeRig is a real broker on loopback with forge routes to the fake forge: "gh" allows no
// class, "gh-CLASS" allows CLASS; "ghes" and "ghes-merge" have the GitHub Enterprise base
// /api/v3; "gl" and "gl-CLASS" are GitLab routes. Every route's patterns allow every method on
// every path, so that only the forge rules decide.
type forgeRig struct {
	forge *fakeForge
	tb    *testBroker
	proxy *url.URL
	n     int
}

func startForgeRig(t *testing.T) *forgeRig {
	t.Helper()
	f := startFakeForge(t)
	ap := netip.MustParseAddrPort(strings.TrimPrefix(f.srv.URL, "https://"))
	roots := f.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	all := []string{"GET /*", "HEAD /*", "POST /*", "PUT /*", "PATCH /*", "DELETE /*"}
	kind := ForgeGitHub
	route := func(name, base string, allow ...string) APIRoute {
		return APIRoute{Name: name, Upstream: fmt.Sprintf("https://example.com:%d%s", ap.Port(), base), Header: "Authorization",
			Value: "Bearer " + forgeToken, Allow: all, RootCAs: roots, Forge: kind, ForgeAllow: allow}
	}
	routes := []APIRoute{route("gh", ""), route("ghes", "/api/v3"), route("ghes-merge", "/api/v3", ForgeMerge),
		route("gh-write-merge", "", ForgeWrite, ForgeMerge)}
	for _, c := range ForgeClasses {
		routes = append(routes, route("gh-"+c, "", c))
	}
	kind = ForgeGitLab
	routes = append(routes, route("gl", ""))
	for _, c := range ForgeClasses {
		routes = append(routes, route("gl-"+c, "", c))
	}
	tb := startBroker(t, []string{fmt.Sprintf("127.0.0.1:%d", ap.Port())},
		fakeResolver{"example.com": {ap.Addr()}}, nil, func(c *Config) {
			c.APIRoutes, c.Limits.Rate, c.Limits.Burst = routes, 1000, 1000 // every probe and its control, at once
		})
	return &forgeRig{forge: f, tb: tb, proxy: &url.URL{Scheme: "http", User: url.UserPassword("box", testSecret), Host: tb.addr}}
}

// forgeReq is one request a box's HTTP client sends.
type forgeReq struct {
	method, path, ctype, body string
	hdr                       map[string]string
	gzip                      bool
}

// send sends r to route through the broker with a real HTTP client and a fresh probe id; it
// returns the status, the body and the probe id.
func (rig *forgeRig) send(t *testing.T, route string, r forgeReq) (int, string, string) {
	t.Helper()
	rig.n++
	probe := strconv.Itoa(rig.n)
	body := []byte(r.body)
	if r.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	req, err := http.NewRequest(r.method, "http://"+route+APISuffix+r.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	if r.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range r.hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Probe", probe)
	req.Header.Set("Authorization", "Bearer box-guess")
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(rig.proxy), DisableKeepAlives: true, ExpectContinueTimeout: 5 * time.Second}, Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", r.method, r.path, route, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), probe
}

// gql is a GraphQL POST body of one request object.
func gql(query string) forgeReq {
	b, _ := jsonString(query)
	return forgeReq{method: "POST", path: "/graphql", ctype: "application/json", body: `{"query":` + b + `}`}
}

func jsonString(s string) (string, error) {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case '\n':
			sb.WriteString(`\n`)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String(), nil
}

// forgeProbes are the hostile variants of each class: each is refused on "gh" (no class
// allowed) and, as its control, passes unchanged on the route allowing its class.
var forgeProbes = []struct {
	name  string
	route string // "" means gh; the control runs on ROUTE-CLASS (gh-CLASS for gh)
	class string
	req   forgeReq
}{
	{"REST merge a pull request", "", ForgeMerge, forgeReq{method: "PUT", path: "/repos/o/r/pulls/1/merge", ctype: "application/json", body: `{}`}},
	{"REST merge, POST instead of PUT", "", ForgeMerge, forgeReq{method: "POST", path: "/repos/o/r/pulls/1/merge"}},
	{"REST merge, upper case", "", ForgeMerge, forgeReq{method: "PUT", path: "/Repos/O/R/Pulls/1/MERGE"}},
	{"REST merge, trailing slash", "", ForgeMerge, forgeReq{method: "PUT", path: "/repos/o/r/pulls/1/merge/"}},
	{"REST merge, format suffix", "", ForgeMerge, forgeReq{method: "PUT", path: "/repos/o/r/pulls/1/merge.json"}},
	{"REST merge, path parameter", "", ForgeMerge, forgeReq{method: "PUT", path: "/repos/o/r/pulls/1/merge;x=1"}},
	{"REST merge, by repository id", "", ForgeMerge, forgeReq{method: "PUT", path: "/repositories/42/pulls/1/merge"}},
	{"REST merge, /api/v3 prefix", "", ForgeMerge, forgeReq{method: "PUT", path: "/api/v3/repos/o/r/pulls/1/merge"}},
	{"REST merge, GHES base", "ghes", ForgeMerge, forgeReq{method: "PUT", path: "/repos/o/r/pulls/1/merge"}},
	{"REST merge branches", "", ForgeMerge, forgeReq{method: "POST", path: "/repos/o/r/merges"}},
	{"REST approve a review", "", ForgeMerge, forgeReq{method: "POST", path: "/repos/o/r/pulls/1/reviews"}},
	{"REST commit status", "", ForgeMerge, forgeReq{method: "POST", path: "/repos/o/r/statuses/abc"}},
	{"REST update a ref", "", ForgePush, forgeReq{method: "PATCH", path: "/repos/o/r/git/refs/heads/main"}},
	{"REST create a ref", "", ForgePush, forgeReq{method: "POST", path: "/repos/o/r/git/refs"}},
	{"REST delete a ref", "", ForgePush, forgeReq{method: "DELETE", path: "/repos/o/r/git/refs/heads/main"}},
	{"REST create a commit", "", ForgePush, forgeReq{method: "POST", path: "/repos/o/r/git/commits"}},
	{"REST contents PUT", "", ForgePush, forgeReq{method: "PUT", path: "/repos/o/r/contents/.github/workflows/x.yml"}},
	{"REST contents DELETE", "", ForgePush, forgeReq{method: "DELETE", path: "/repos/o/r/contents/README"}},
	{"REST rename a branch", "", ForgePush, forgeReq{method: "POST", path: "/repos/o/r/branches/main/rename"}},
	{"REST branch protection", "", ForgeProtection, forgeReq{method: "DELETE", path: "/repos/o/r/branches/main/protection"}},
	{"REST branch protection, slashed branch", "", ForgeProtection, forgeReq{method: "PUT", path: "/repos/o/r/branches/release/1.x/protection/required_status_checks"}},
	{"REST rulesets", "", ForgeProtection, forgeReq{method: "PUT", path: "/repos/o/r/rulesets/7"}},
	{"REST repository settings", "", ForgeProtection, forgeReq{method: "PATCH", path: "/repos/o/r", ctype: "application/json", body: `{"default_branch":"corral"}`}},
	{"REST deploy key", "", ForgeProtection, forgeReq{method: "POST", path: "/repos/o/r/keys"}},
	{"REST webhook", "", ForgeProtection, forgeReq{method: "POST", path: "/repos/o/r/hooks"}},
	{"REST collaborator", "", ForgeProtection, forgeReq{method: "PUT", path: "/repos/o/r/collaborators/mallory"}},
	{"REST org ruleset", "", ForgeProtection, forgeReq{method: "POST", path: "/orgs/o/rulesets"}},
	{"REST account ssh key", "", ForgeProtection, forgeReq{method: "POST", path: "/user/keys"}},
	{"REST actions secret", "", ForgeProtection, forgeReq{method: "PUT", path: "/repos/o/r/actions/secrets/X"}},
	{"GraphQL merge", "", ForgeMerge, gql(`mutation { mergePullRequest(input:{pullRequestId:"P"}) { clientMutationId } }`)},
	{"GraphQL merge, aliased", "", ForgeMerge, gql(`mutation M { harmless: mergePullRequest(input:{pullRequestId:"P"}) { clientMutationId } }`)},
	{"GraphQL merge, fragment spread", "", ForgeMerge, gql("mutation { ...F }\nfragment F on Mutation { mergePullRequest(input:{pullRequestId:\"P\"}) { clientMutationId } }")},
	{"GraphQL merge, nested fragments", "", ForgeMerge, gql("mutation { ...A }\nfragment A on Mutation { ... on Mutation { ...B } }\nfragment B on Mutation { x: enablePullRequestAutoMerge(input:{}) { clientMutationId } }")},
	{"GraphQL merge, inline fragment", "", ForgeMerge, gql(`mutation { ... on Mutation { enqueuePullRequest(input:{}) { clientMutationId } } }`)},
	{"GraphQL merge, second of two operations", "", ForgeMerge, forgeReq{method: "POST", path: "/graphql", ctype: "application/json",
		body: `{"query":"query Q { viewer { login } } mutation M { mergePullRequest(input:{}) { clientMutationId } }","operationName":"Q"}`}},
	{"GraphQL merge, in a batch", "", ForgeMerge, forgeReq{method: "POST", path: "/graphql", ctype: "application/json; charset=utf-8",
		body: `[{"query":"{ viewer { login } }"},{"query":"mutation { mergeBranch(input:{}) { clientMutationId } }"}]`}},
	{"GraphQL merge, after a comment mutation", "gh-write", ForgeMerge, gql(`mutation { addComment(input:{}) { clientMutationId } mergePullRequest(input:{}) { clientMutationId } }`)},
	{"GraphQL merge, /api/graphql", "", ForgeMerge, forgeReq{method: "POST", path: "/api/graphql", ctype: "application/json", body: `{"query":"mutation { mergePullRequest(input:{}) { clientMutationId } }"}`}},
	{"GraphQL merge, upper-case path", "", ForgeMerge, forgeReq{method: "POST", path: "/GraphQL/", ctype: "application/json", body: `{"query":"mutation { mergePullRequest(input:{}) { clientMutationId } }"}`}},
	{"GraphQL merge, GET", "", ForgeMerge, forgeReq{method: "GET", path: "/graphql?query=" + url.QueryEscape(`mutation { mergePullRequest(input:{}) { clientMutationId } }`)}},
	{"GraphQL push, updateRefs", "", ForgePush, gql(`mutation { updateRefs(input:{}) { clientMutationId } }`)},
	{"GraphQL push, createCommitOnBranch", "", ForgePush, gql(`mutation($i: CreateCommitOnBranchInput!) { createCommitOnBranch(input:$i) { clientMutationId } }`)},
	{"GraphQL push, deleteRef", "", ForgePush, gql(`mutation { deleteRef(input:{refId:"R"}) { clientMutationId } }`)},
	{"GraphQL protection", "", ForgeProtection, gql(`mutation { deleteBranchProtectionRule(input:{}) { clientMutationId } }`)},
	{"GraphQL protection, ruleset", "", ForgeProtection, gql(`mutation { updateRepositoryRuleset(input:{}) { clientMutationId } }`)},
	{"GraphQL protection, repository settings", "", ForgeProtection, gql(`mutation { updateRepository(input:{}) { clientMutationId } }`)},
	{"GraphQL write, a comment", "", ForgeWrite, gql(`mutation { addComment(input:{subjectId:"I",body:"hi"}) { clientMutationId } }`)},
}

// gitlabProbes are forgeProbes for a GitLab route.
var gitlabProbes = []struct {
	name  string
	route string
	class string
	req   forgeReq
}{
	{"GitLab merge", "gl", ForgeMerge, forgeReq{method: "PUT", path: "/api/v4/projects/7/merge_requests/1/merge"}},
	{"GitLab merge, project by path", "gl", ForgeMerge, forgeReq{method: "PUT", path: "/api/v4/projects/group%2Fsub%2Fproj/merge_requests/1/merge"}},
	{"GitLab merge, lower-case escape and case", "gl", ForgeMerge, forgeReq{method: "POST", path: "/API/V4/Projects/group%2fproj/Merge_Requests/1/MERGE.json"}},
	{"GitLab approve", "gl", ForgeMerge, forgeReq{method: "POST", path: "/api/v4/projects/7/merge_requests/1/approve"}},
	{"GitLab merge train", "gl", ForgeMerge, forgeReq{method: "POST", path: "/api/v4/projects/7/merge_trains/merge_requests/1"}},
	{"GitLab commit", "gl", ForgePush, forgeReq{method: "POST", path: "/api/v4/projects/7/repository/commits"}},
	{"GitLab file", "gl", ForgePush, forgeReq{method: "PUT", path: "/api/v4/projects/g%2Fp/repository/files/.gitlab-ci.yml"}},
	{"GitLab delete branch", "gl", ForgePush, forgeReq{method: "DELETE", path: "/api/v4/projects/7/repository/branches/main"}},
	{"GitLab rebase", "gl", ForgePush, forgeReq{method: "PUT", path: "/api/v4/projects/7/merge_requests/1/rebase"}},
	{"GitLab unprotect", "gl", ForgeProtection, forgeReq{method: "DELETE", path: "/api/v4/projects/7/protected_branches/main"}},
	{"GitLab project settings", "gl", ForgeProtection, forgeReq{method: "PUT", path: "/api/v4/projects/g%2Fp"}},
	{"GitLab approval rules", "gl", ForgeProtection, forgeReq{method: "POST", path: "/api/v4/projects/7/approval_rules"}},
	{"GitLab group", "gl", ForgeProtection, forgeReq{method: "PUT", path: "/api/v4/groups/g"}},
	{"GitLab GraphQL accept", "gl", ForgeMerge, forgeReq{method: "POST", path: "/api/graphql", ctype: "application/json",
		body: `{"query":"mutation { a: mergeRequestAccept(input:{projectPath:\"g/p\",iid:\"1\"}) { errors } }"}`}},
	{"GitLab GraphQL auto-merge", "gl", ForgeMerge, forgeReq{method: "POST", path: "/api/graphql", ctype: "application/json",
		body: `{"query":"mutation { ...F } fragment F on Mutation { mergeRequestSetAutoMerge(input:{}) { errors } }"}`}},
	{"GitLab GraphQL commit", "gl", ForgePush, forgeReq{method: "POST", path: "/api/graphql", ctype: "application/json",
		body: `{"query":"mutation { commitCreate(input:{}) { errors } }"}`}},
	{"GitLab GraphQL branch rule", "gl", ForgeProtection, forgeReq{method: "POST", path: "/api/graphql", ctype: "application/json",
		body: `{"query":"mutation { branchRuleDelete(input:{}) { errors } }"}`}},
	{"GitLab GraphQL new merge request", "gl", ForgeWrite, forgeReq{method: "POST", path: "/api/graphql", ctype: "application/json",
		body: `{"query":"mutation { mergeRequestCreate(input:{}) { errors } }"}`}},
}

// TestForgeRouteRefusesClasses: on a forge route, each class of request is refused unless
// forge_api_allow (ForgeAllow) lists it: 403 with one line naming the class and the key, logged
// with the class, and nothing reaches the forge. Control for every probe: the same request on
// a route that allows its class reaches the forge with the host's credential in place of the
// box's.
func TestForgeRouteRefusesClasses(t *testing.T) {
	rig := startForgeRig(t)
	probes := append(forgeProbes, gitlabProbes...)
	for _, p := range probes {
		route := p.route
		if route == "" {
			route = "gh"
		}
		status, body, probe := rig.send(t, route, p.req)
		if status != http.StatusForbidden || strings.Count(body, "\n") != 1 || !strings.Contains(body, p.class+" (") ||
			!strings.Contains(body, `forge_api_allow = ["`+p.class+`"]`) {
			t.Errorf("%s: on %s got %d %q, want 403 naming %s and forge_api_allow", p.name, route, status, body, p.class)
		}
		if got := rig.forge.got(probe); len(got) != 0 {
			t.Errorf("%s: the refused request reached the forge: %+v", p.name, got)
		}
		control := route + "-" + p.class
		status, body, probe = rig.send(t, control, p.req)
		got := rig.forge.got(probe)
		if status != 200 || len(got) != 1 || got[0].auth != "Bearer "+forgeToken || got[0].body != p.req.body {
			t.Errorf("%s: control on %s got %d %q, forge saw %+v", p.name, control, status, body, got)
		}
	}
	assertForgeLog(t, rig)
}

// assertForgeLog checks that refusals are logged with their class and that the token is in
// no line.
func assertForgeLog(t *testing.T, rig *forgeRig) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	classes := map[string]int{}
	for _, e := range rig.tb.entries(t) {
		if e.Decision == Deny {
			classes[e.Forge]++
			if !strings.HasPrefix(e.Reason, "forge: ") {
				t.Errorf("refusal logged without its reason: %+v", e)
			}
		}
	}
	for _, c := range ForgeClasses {
		if classes[c] == 0 {
			t.Errorf("no refusal logged with class %s: %v", c, classes)
		}
	}
	data, _ := os.ReadFile(rig.tb.logPath)
	if strings.Contains(string(data), forgeToken) {
		t.Error("the egress log holds the token")
	}
}

// TestForgeRouteRefusesUnreadable: what the broker cannot judge is refused before the forge
// sees it (method overrides, compressed, oversized, non-JSON, persisted or unparsable GraphQL,
// JSON keys that two parsers could read differently, subscriptions). Control for each: the
// well-formed variant passes on the same route.
func TestForgeRouteRefusesUnreadable(t *testing.T) {
	rig := startForgeRig(t)
	read := gql(`query { viewer { login } }`)
	big := strings.Repeat(" ", maxGraphQLBytes) + `{"query":"{ viewer { login } }"}`
	cases := []struct {
		name    string
		bad, ok forgeReq
		status  int
		want    string
	}{
		{"override header turns a GET into a merge", forgeReq{method: "GET", path: "/repos/o/r/pulls/1/merge", hdr: map[string]string{"X-HTTP-Method-Override": "PUT"}},
			forgeReq{method: "GET", path: "/repos/o/r/pulls/1/merge"}, 403, "X-Http-Method-Override"},
		{"X-HTTP-Method header", forgeReq{method: "POST", path: "/repos/o/r/issues", hdr: map[string]string{"X-HTTP-Method": "PUT"}},
			forgeReq{method: "POST", path: "/repos/o/r/issues"}, 403, "X-Http-Method"},
		{"X-Method-Override header", forgeReq{method: "GET", path: "/repos/o/r", hdr: map[string]string{"X-Method-Override": "DELETE"}},
			forgeReq{method: "GET", path: "/repos/o/r"}, 403, "X-Method-Override"},
		{"_method parameter", forgeReq{method: "POST", path: "/repos/o/r/issues?_METHOD=PUT"},
			forgeReq{method: "POST", path: "/repos/o/r/issues?state=open"}, 403, "_METHOD"},
		{"gzip GraphQL body", forgeReq{method: "POST", path: "/graphql", ctype: "application/json", body: read.body, gzip: true},
			read, 400, "Content-Encoding"},
		{"GraphQL not JSON", forgeReq{method: "POST", path: "/graphql", ctype: "application/graphql", body: `{ viewer { login } }`},
			read, 400, "want application/json"},
		{"GraphQL oversized", forgeReq{method: "POST", path: "/graphql", ctype: "application/json", body: big, hdr: map[string]string{"Expect": "100-continue"}},
			read, 400, "larger than"},
		{"GraphQL persisted query", forgeReq{method: "POST", path: "/graphql", ctype: "application/json",
			body: `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`}, read, 400, "persisted"},
		{"GraphQL null query", forgeReq{method: "POST", path: "/graphql", ctype: "application/json", body: `{"query":null}`}, read, 400, "persisted"},
		{"GraphQL duplicate key", forgeReq{method: "POST", path: "/graphql", ctype: "application/json",
			body: `{"query":"{ viewer { login } }","query":"mutation { mergePullRequest(input:{}) { clientMutationId } }"}`}, read, 400, "twice"},
		{"GraphQL key in another case", forgeReq{method: "POST", path: "/graphql", ctype: "application/json",
			body: `{"query":"mutation { mergePullRequest(input:{}) { clientMutationId } }","QUERY":"{ viewer { login } }"}`}, read, 400, `"QUERY"`},
		{"GraphQL unparsable", gql(`mutation { mergePullRequest(input:{}) { clientMutationId }`), read, 400, "does not parse"},
		{"GraphQL undefined fragment", gql(`mutation { ...Nope }`), read, 400, "undefined"},
		{"GraphQL cyclic fragments", gql("mutation { ...A }\nfragment A on Mutation { ...B }\nfragment B on Mutation { ...A }"), read, 400, "cycles"},
		{"GraphQL subscription", gql(`subscription { x }`), read, 400, "subscription"},
		{"GraphQL invalid UTF-8", forgeReq{method: "POST", path: "/graphql", ctype: "application/json", body: "{\"query\":\"{ viewer \xff }\"}"}, read, 400, "UTF-8"},
		{"GraphQL trailing bytes", forgeReq{method: "POST", path: "/graphql", ctype: "application/json", body: read.body + `{"query":"mutation { mergePullRequest(input:{}) { clientMutationId } }"}`}, read, 400, "JSON"},
		{"GraphQL empty batch", forgeReq{method: "POST", path: "/graphql", ctype: "application/json", body: `[]`}, read, 400, "batch"},
		{"GraphQL GET with another parameter", forgeReq{method: "GET", path: "/graphql?query=%7Bviewer%7Blogin%7D%7D&extensions=x"},
			forgeReq{method: "GET", path: "/graphql?query=%7Bviewer%7Blogin%7D%7D"}, 400, "extensions"},
	}
	for _, c := range cases {
		status, body, probe := rig.send(t, "gh", c.bad)
		if status != c.status || strings.Count(body, "\n") != 1 || !strings.Contains(body, c.want) {
			t.Errorf("%s: got %d %q, want %d with %q", c.name, status, body, c.status, c.want)
		}
		if got := rig.forge.got(probe); len(got) != 0 {
			t.Errorf("%s: the refused request reached the forge: %+v", c.name, got)
		}
		status, body, probe = rig.send(t, "gh", c.ok)
		if got := rig.forge.got(probe); status != 200 || len(got) != 1 || got[0].auth != "Bearer "+forgeToken {
			t.Errorf("%s: control got %d %q, forge saw %+v", c.name, status, body, got)
		}
	}
	// The log holds the class and a fixed reason, never what the box's document said.
	for _, e := range rig.tb.entries(t) {
		if e.Decision == Deny && (strings.Contains(e.Reason, "viewer") || strings.Contains(e.Reason, "QUERY") || e.Forge == "") {
			t.Errorf("refusal logged with payload bytes or no class: %+v", e)
		}
	}
	// An encoded slash never reaches the classifier: the route refuses it as unclean (405).
	status, _, probe := rig.send(t, "gh-push", forgeReq{method: "PUT", path: "/repos/o/r/pulls/1%2Fmerge"})
	if status != http.StatusMethodNotAllowed || len(rig.forge.got(probe)) != 0 {
		t.Errorf("encoded slash: %d, forge saw %+v", status, rig.forge.got(probe))
	}
}

// TestForgeRouteReadsAndOtherWrites: reads pass on a route that allows no class (REST GETs,
// GraphQL queries, several queries, a batch of queries, a query reusing fragments); a REST
// write of no class follows the allow patterns alone; each is logged with its class.
func TestForgeRouteReadsAndOtherWrites(t *testing.T) {
	rig := startForgeRig(t)
	for _, r := range []forgeReq{
		{method: "GET", path: "/repos/o/r/pulls/1/merge"},
		{method: "HEAD", path: "/repos/o/r"},
		{method: "GET", path: "/graphql"},
		gql(`{ viewer { login } }`),
		gql("query A { viewer { ...U } } query B { viewer { ...U ...U } }\nfragment U on User { login }"),
		{method: "POST", path: "/graphql", ctype: "application/json", body: `[{"query":"{ a }","variables":{"x":1},"operationName":null},{"query":"query { b }"}]`},
		{method: "POST", path: "/repos/o/r/issues", ctype: "application/json", body: `{"title":"t"}`},
		{method: "POST", path: "/repos/o/r/pulls", ctype: "application/json", body: `{"head":"corral/x","base":"main"}`},
	} {
		status, body, probe := rig.send(t, "gh", r)
		got := rig.forge.got(probe)
		if status != 200 || len(got) != 1 || got[0].auth != "Bearer "+forgeToken || got[0].body != r.body {
			t.Errorf("%s %s: got %d %q, forge saw %+v", r.method, r.path, status, body, got)
		}
	}
	time.Sleep(50 * time.Millisecond)
	for _, e := range rig.tb.entries(t) {
		want := ForgeRead
		if e.Method == "POST" && strings.HasPrefix(e.Path, "/repos/") {
			want = ForgeWrite
		}
		if e.Decision != Allow || e.Forge != want {
			t.Errorf("logged %+v, want allowed with class %s", e, want)
		}
	}
}

// TestForgeGitLabProjectPaths: a GitLab route lets "%2F" through inside a segment, as GitLab
// names projects, and forwards it encoded (upper-cased); any other percent-encoding, or a
// "%2F" that decodes to "..", "." or an empty segment, is refused (405) before the forge sees
// it. Control: a GitHub route refuses "%2F" as before.
func TestForgeGitLabProjectPaths(t *testing.T) {
	rig := startForgeRig(t)
	for path, want := range map[string]string{
		"/api/v4/projects/g%2Fsub%2Fp/merge_requests?state=opened": "/api/v4/projects/g%2Fsub%2Fp/merge_requests?state=opened",
		"/api/v4/projects/g%2fp/repository/tree":                   "/api/v4/projects/g%2Fp/repository/tree",
	} {
		status, body, probe := rig.send(t, "gl", forgeReq{method: "GET", path: path})
		got := rig.forge.got(probe)
		if status != 200 || len(got) != 1 || got[0].uri != want || got[0].auth != "Bearer "+forgeToken {
			t.Errorf("GET %s: %d %q, forge saw %+v, want %s", path, status, body, got, want)
		}
	}
	for _, path := range []string{
		"/api/v4/projects/g%2F..%2Fx/merge_requests", "/api/v4/projects/g%2F%2Fp/merge_requests",
		"/api/v4/projects/g%2F.%2Fp/merge_requests", "/api/v4/projects/g%2Fp/merge_requests/1/%6Derge",
		"/api/v4/projects/g%252Fp/merge_requests", "/api/v4/projects/g%2Fp/..%2Fmerge_requests",
	} {
		status, _, probe := rig.send(t, "gl-merge", forgeReq{method: "PUT", path: path})
		if status != http.StatusMethodNotAllowed || len(rig.forge.got(probe)) != 0 {
			t.Errorf("PUT %s on a GitLab route: %d, forge saw %+v; want 405", path, status, rig.forge.got(probe))
		}
	}
	for _, path := range []string{"/repos/o%2Fr/pulls", "/repos/o/r/pulls/1%252Fmerge"} {
		status, _, probe := rig.send(t, "gh-write", forgeReq{method: "PUT", path: path})
		if status != http.StatusMethodNotAllowed || len(rig.forge.got(probe)) != 0 {
			t.Errorf("a GitHub route let %s through: %d", path, status)
		}
	}
}

// TestForgeClassify: the path and mutation tables, directly.
func TestForgeClassify(t *testing.T) {
	for path, want := range map[string]string{
		"/repos/o/r/pulls/1/update-branch": ForgeMerge, "/repos/o/r/merge-upstream": ForgeMerge,
		"/repos/o/r/pulls/1/reviews/2/dismissals": ForgeProtection, "/repos/o/r/check-runs": ForgeMerge,
		"/repos/o/r/git/trees": ForgePush, "/repos/o/r/git/blobs": ForgePush, "/repos/o/r/git/tags": ForgePush,
		"/repos/o/r/releases": ForgePush, "/repos/o/r/tags/protection": ForgeProtection,
		"/repos/o/r/transfer": ForgeProtection, "/repos/o/r/environments/prod": ForgeProtection,
		"/repos/o/r/actions/permissions/workflow": ForgeProtection, "/repos/o/r/actions/workflows/1/dispatches": ForgeWrite,
		"/repos/o/r/issues/1/comments": ForgeWrite, "/repos/o/r/pulls/1": ForgeWrite, "/user/repos": ForgeWrite,
		"/user": ForgeProtection, "/user/gpg_keys": ForgeProtection, "/teams/1/repos/o/r": ForgeProtection,
		"/gists": ForgeWrite, "/repos/o": ForgeProtection,
	} {
		segs, _ := forgePath(path)
		if got := githubREST(segs); got != want {
			t.Errorf("REST %s: %s, want %s", path, got, want)
		}
	}
	for path, want := range map[string]string{
		"/api/v4/projects": ForgeWrite, "/api/v4/projects/7/issues": ForgeWrite, "/api/v4/projects/7/merge_requests": ForgeWrite,
		"/api/v4/projects/7/merge_requests/1/notes": ForgeWrite, "/api/v4/projects/7/repository/commits/abc/comments": ForgeWrite,
		"/api/v4/projects/7/repository/commits/abc/cherry_pick": ForgePush, "/api/v4/projects/7/repository/tags": ForgePush,
		"/api/v4/projects/7/releases": ForgePush, "/api/v4/projects/7/merge_requests/1/approvals": ForgeProtection,
		"/api/v4/projects/7/variables/X": ForgeProtection, "/api/v4/user/keys": ForgeProtection, "/api/v4/user": ForgeProtection,
		"/api/v4/projects/7/deploy_keys": ForgeProtection, "/api/v4/projects/7/statuses/abc": ForgeMerge,
	} {
		segs, _ := forgePath(path)
		if got := gitlabREST(segs); got != want {
			t.Errorf("GitLab REST %s: %s, want %s", path, got, want)
		}
	}
	for name, want := range map[string]string{
		"mergeRequestAccept": ForgeMerge, "mergeRequestSetAutoMerge": ForgeMerge, "mergeRequestCreate": ForgeWrite,
		"mergeRequestUpdate": ForgeWrite, "mergeRequestSetDraft": ForgeWrite, "commitCreate": ForgePush,
		"createBranch": ForgePush, "branchRuleCreate": ForgeProtection, "projectCiCdSettingsUpdate": ForgeProtection,
		"createNote": ForgeWrite, "createIssue": ForgeWrite, "mergeRequestUpdateApprovalRule": ForgeProtection,
	} {
		if got := gitlabMutation(name); got != want {
			t.Errorf("GitLab mutation %s: %s, want %s", name, got, want)
		}
	}
	for name, want := range map[string]string{
		"mergePullRequest": ForgeMerge, "disablePullRequestAutoMerge": ForgeMerge, "createCommitOnBranch": ForgePush,
		"createBranchProtectionRule": ForgeProtection, "updateEnterpriseMembersCanMakePurchasesSetting": ForgeProtection,
		"createIpAllowListEntry": ForgeProtection, "addComment": ForgeWrite, "createPullRequest": ForgeWrite,
		"createIssue": ForgeWrite, "closePullRequest": ForgeWrite, "updateRefs": ForgePush,
	} {
		if got := githubMutation(name); got != want {
			t.Errorf("mutation %s: %s, want %s", name, got, want)
		}
	}
}

// TestForgeRouteConfigErrors: a forge route names a known forge and known classes.
func TestForgeRouteConfigErrors(t *testing.T) {
	base := APIRoute{Name: "gh", Upstream: "https://api.github.com", Header: "Authorization", Value: "Bearer x", Allow: []string{"GET /*"}}
	for _, c := range []struct {
		forge string
		allow []string
		want  string
	}{
		{"gitea", nil, `forge "gitea"`},
		{"github", []string{"merge", "delete"}, `forge class "delete"`},
		{"", []string{"merge"}, "without a forge"},
	} {
		r := base
		r.Forge, r.ForgeAllow = c.forge, c.allow
		if _, err := parseRoutes([]APIRoute{r}, login.Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("forge %q allow %v: %v, want %q", c.forge, c.allow, err, c.want)
		}
	}
	r := base
	r.Forge, r.ForgeAllow = ForgeGitHub, ForgeClasses
	if _, err := parseRoutes([]APIRoute{r}, login.Options{}); err != nil {
		t.Errorf("control: %v", err)
	}
}

// FuzzForgeGraphQL: the GraphQL judge never panics, and whatever it lets through as reads
// only is a body whose every document parses to queries alone.
func FuzzForgeGraphQL(f *testing.F) {
	for _, s := range []string{
		`{"query":"{ viewer { login } }"}`,
		`[{"query":"query A { a } mutation B { mergePullRequest(input:{}) { x } }"}]`,
		`{"query":"mutation { ...F } fragment F on Mutation { ... on Mutation { x: deleteRef(input:{}) { y } } }","operationName":"F"}`,
		`{"query":"mutation { ...A } fragment A on Mutation { ...A }"}`,
		`{"query":"subscription { a }","variables":{"a":[1,{"b":null}]}}`,
		`{"query":"{ a }","QUERY":"mutation { b }"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		vs, err := judgeGraphQLBody(body, ForgeGitHub)
		if err != nil {
			return
		}
		reads := len(vs) > 0
		for _, v := range vs {
			reads = reads && v.class == ForgeRead
		}
		if reads && bytes.Contains(bytes.ToLower(body), []byte("mutation")) {
			// A read may mention "mutation" in a string or a field name; it must still hold no
			// mutation operation: parse again and check.
			objs := []json.RawMessage{body}
			if t0 := bytes.TrimLeft(body, " \t\r\n"); len(t0) > 0 && t0[0] == '[' {
				json.Unmarshal(body, &objs)
			}
			for _, o := range objs {
				q, _ := graphQLQueryText(o)
				doc, err := parser.ParseQuery(&ast.Source{Input: q})
				if err != nil {
					t.Fatalf("judged a read, but the document does not parse: %s", body)
				}
				for _, op := range doc.Operations {
					if op.Operation != ast.Query {
						t.Fatalf("judged a %s operation a read: %s", op.Operation, body)
					}
				}
			}
		}
	})
}
