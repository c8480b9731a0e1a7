package broker

// Forge rules. An API route with Forge set (the built-in github route, and any route carrying a
// git_tokens token) is a forge's API with the user's token, which can do what git_push refuses:
// merge a pull request, move a ref, change branch protection. After the route's allow patterns,
// the broker classifies every request on such a route and refuses the classes the trusted
// forge_api_allow does not list:
//   - read: GET and HEAD (outside the GraphQL path), and GraphQL requests whose operations are
//     all queries. Always allowed.
//   - merge: what merges or satisfies a merge requirement: merging a pull request or branches,
//     updating a pull request's branch from its base, syncing a fork, auto-merge and the merge
//     queue, submitting or approving reviews, commit statuses and check runs.
//   - push: what moves or feeds a ref without git: git data (refs, commits, trees, blobs, tag
//     objects), file contents, branch renames, releases (which create tags), commits on a branch.
//   - protection: protection and administration: branch protection, rulesets, tag protection,
//     repository settings (a PATCH or DELETE of the repository itself: default branch,
//     visibility, merge settings, deletion), transfers, deploy keys, webhooks, collaborators,
//     teams and invitations, environments, Actions and Dependabot secrets, variables, runners
//     and permissions, security settings; every write under /orgs, /enterprises, /teams, /admin,
//     /app, /applications, /authorizations, and the account's keys, e-mails and memberships
//     under /user.
//   - write: a GraphQL mutation of none of the classes above (creating an issue, a comment).
//     REST writes of no class follow the route's allow patterns alone, path by path; a GraphQL
//     mutation shares one path with every other, so it needs the class.
//
// How a request is read, so that no spelling walks around the classes:
//   - the path classified is the route's base plus the request path (already clean: the route
//     refused "..", "//" and percent-encoding, but for "%2F" on a GitLab route, which names a
//     project or group by path in one segment; a forge route also refuses an encoded "%", which
//     an upstream decoding twice would read as another path than the one judged), lower-cased,
//     without a trailing slash, each segment cut at ";" and stripped of ".json", an "/api/v3"
//     (GitHub Enterprise) or "/api/v4" (GitLab) prefix dropped, and /repositories/ID read as
//     /repos/OWNER/REPO;
//   - a write's class comes from its path alone, whatever its method (PUT, POST, PATCH);
//   - method override headers (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override) and a
//     "_method" query parameter are refused on a forge route;
//   - a GraphQL request (POST /graphql or /api/graphql) is read whole, at most 1 MiB, before
//     anything reaches the upstream: JSON only (one object, or a batch array of them), no
//     Content-Encoding, valid UTF-8, keys "query", "operationName" and "variables" spelled
//     exactly and each at most once; a request without query text (a persisted query) is
//     refused. Every operation of the document is judged, whatever operationName selects, and
//     a mutation's root fields are judged by name (never alias), those reached through
//     fragments included; a subscription, a document that does not parse, or a fragment that
//     is undefined or cycles is refused. A GET of the GraphQL path is judged the same way from
//     its query parameters;
//   - a refusal is answered 403 with one line naming the class, the request and the key that
//     would allow it, and logged with the class; nothing reaches the upstream and no credential
//     is added.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// Forge kinds.
const (
	ForgeGitHub = "github"
	ForgeGitLab = "gitlab"
)

// Forge request classes, as forge_api_allow names them.
const (
	ForgeRead       = "read"
	ForgeMerge      = "merge"
	ForgePush       = "push"
	ForgeProtection = "protection"
	ForgeWrite      = "write"
)

// ForgeClasses are the classes forge_api_allow may list.
var ForgeClasses = []string{ForgeMerge, ForgePush, ForgeProtection, ForgeWrite}

// ForgeKinds are the forges the broker knows the API of.
var ForgeKinds = []string{ForgeGitHub, ForgeGitLab}

// maxGraphQLBytes bounds a GraphQL request body the broker reads to judge it.
const maxGraphQLBytes = 1 << 20

// maxGraphQLTokens bounds the tokens of one GraphQL document.
const maxGraphQLTokens = 50000

// maxGraphQLBatch bounds the requests of a GraphQL batch.
const maxGraphQLBatch = 100

// overrideHeaders are the headers some servers read as the real method.
var overrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// forgeRules are a route's forge kind and the classes it lets through.
type forgeRules struct {
	kind  string
	allow []string
}

// parseForge checks a route's forge fields.
func parseForge(kind string, allow []string) (*forgeRules, error) {
	if kind == "" {
		if len(allow) > 0 {
			return nil, errors.New("forge classes allowed on a route without a forge")
		}
		return nil, nil
	}
	if !slices.Contains(ForgeKinds, kind) {
		return nil, fmt.Errorf("forge %q: want one of %s", kind, strings.Join(ForgeKinds, ", "))
	}
	for _, c := range allow {
		if !slices.Contains(ForgeClasses, c) {
			return nil, fmt.Errorf("forge class %q: want %s", c, strings.Join(ForgeClasses, ", "))
		}
	}
	return &forgeRules{kind: kind, allow: slices.Clone(allow)}, nil
}

// forgeVerdict is the class of one request and what decided it (a field name, a path).
type forgeVerdict struct {
	class string
	what  string
	// byPattern is set for a REST write of no class: the route's allow patterns, which let it
	// through, decide it.
	byPattern bool
}

// judgeForge classifies req on a forge route, reading a GraphQL body whole when it must (and
// putting it back for forwarding). It returns the request's class when it may go on (the first
// class other than read it holds, or read), or the refusal and its reason.
func (b *Broker) judgeForge(dc *deadlineConn, req *http.Request, rt *apiRoute, p, raw string) (class string, refused *forgeVerdict, reason string) {
	for _, h := range overrideHeaders {
		if _, ok := req.Header[h]; ok {
			return "", &forgeVerdict{class: "override", what: h}, "a method override header (" + h + ") is refused on a forge route"
		}
	}
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return "", &forgeVerdict{class: "unreadable", what: "query"}, "an unparsable query string is refused on a forge route"
	}
	for k := range q {
		if strings.EqualFold(k, "_method") {
			return "", &forgeVerdict{class: "override", what: k}, "a method override parameter (" + k + ") is refused on a forge route"
		}
	}
	segs, graphql := forgePath(rt.base + raw)
	var vs []forgeVerdict
	switch {
	case graphql && (req.Method == http.MethodGet || req.Method == http.MethodHead):
		vs, err = judgeGraphQLQuery(q, rt.forge.kind)
	case graphql && req.Method == http.MethodPost:
		var body []byte
		if body, err = b.readGraphQL(dc, req); err == nil {
			vs, err = judgeGraphQLBody(body, rt.forge.kind)
		}
	case graphql:
		vs = []forgeVerdict{{class: ForgeWrite, what: req.Method + " on the GraphQL path"}}
	case req.Method == http.MethodGet || req.Method == http.MethodHead:
		vs = []forgeVerdict{{class: ForgeRead}}
	default:
		c := githubREST(segs)
		if rt.forge.kind == ForgeGitLab {
			c = gitlabREST(segs)
		}
		vs = []forgeVerdict{{class: c, what: req.Method + " " + raw, byPattern: c == ForgeWrite}}
	}
	if err != nil {
		return "", &forgeVerdict{class: "unreadable", what: "GraphQL request refused: " + err.Error()}, "GraphQL request the broker cannot judge"
	}
	class = ForgeRead
	for _, v := range vs {
		if v.class == ForgeRead {
			continue
		}
		if !v.byPattern && !slices.Contains(rt.forge.allow, v.class) {
			return "", &v, v.class + " refused: " + v.what
		}
		if class == ForgeRead {
			class = v.class
		}
	}
	return class, nil, ""
}

// forgeRefusalText is the one line a refused client reads: line breaks in what the box sent
// (a parser's message quoting its document) are folded, and the line is bounded.
func forgeRefusalText(rt *apiRoute, v *forgeVerdict, reason string) string {
	var line string
	switch {
	case v.class == "unreadable":
		line = "corral: forge api route " + rt.name + ": " + v.what
	case !slices.Contains(ForgeClasses, v.class):
		line = "corral: forge api route " + rt.name + ": " + reason
	default:
		line = fmt.Sprintf("corral: forge api route %s: %s (%s) is refused; forge_api_allow = [\"%s\"] in a trusted configuration file would allow it", rt.name, v.class, v.what, v.class)
	}
	line = strings.Join(strings.Fields(line), " ")
	if len(line) > 1024 {
		line = line[:1024] + "…"
	}
	return line
}

// serveForge judges a request on a forge route and records its class in e; it reports whether
// the request may be forwarded. A refusal is logged and answered here.
func (b *Broker) serveForge(dc *deadlineConn, req *http.Request, rt *apiRoute, e *Entry, p, raw string, start time.Time) bool {
	class, v, reason := b.judgeForge(dc, req, rt, p, raw)
	if v == nil {
		e.Forge = class
		return true
	}
	e.Forge = v.class
	status := http.StatusForbidden
	if v.class == "unreadable" {
		status = http.StatusBadRequest
	}
	b.refuseText(dc, start, withReason(*e, "forge: "+reason), status, forgeRefusalText(rt, v, reason))
	return false
}

// readGraphQL reads a GraphQL POST body whole, refusing a compressed or oversized one, and
// puts it back on req for forwarding.
func (b *Broker) readGraphQL(dc *deadlineConn, req *http.Request) ([]byte, error) {
	if len(req.Header.Values("Content-Encoding")) > 0 {
		return nil, errors.New("a Content-Encoding is refused: the broker reads GraphQL requests uncompressed")
	}
	mt, _, _ := strings.Cut(req.Header.Get("Content-Type"), ";")
	if mt = strings.ToLower(strings.TrimSpace(mt)); mt != "application/json" {
		return nil, fmt.Errorf("content type %q: want application/json", mt)
	}
	if req.ContentLength > maxGraphQLBytes {
		return nil, fmt.Errorf("body larger than %d bytes", maxGraphQLBytes)
	}
	continueIfExpected(dc, req)
	req.Header.Del("Expect")
	body, err := io.ReadAll(io.LimitReader(req.Body, maxGraphQLBytes+1))
	if err != nil {
		return nil, fmt.Errorf("body: %v", err)
	}
	if len(body) > maxGraphQLBytes {
		return nil, fmt.Errorf("body larger than %d bytes", maxGraphQLBytes)
	}
	req.Body, req.ContentLength, req.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	return body, nil
}

// forgePath normalises base+path (escaped: a GitLab project's "%2F" stays inside its segment)
// for classification (see the rules above): its segments, and whether it is the GraphQL
// endpoint.
func forgePath(full string) ([]string, bool) {
	var segs []string
	for _, s := range strings.Split(strings.ToLower(full), "/") {
		s, _, _ = strings.Cut(s, ";")
		if s = strings.TrimSuffix(s, ".json"); s != "" {
			segs = append(segs, s)
		}
	}
	if len(segs) >= 2 && segs[0] == "api" && (segs[1] == "v3" || segs[1] == "v4") {
		segs = segs[2:]
	}
	graphql := slices.Equal(segs, []string{"graphql"}) || slices.Equal(segs, []string{"api", "graphql"})
	if len(segs) >= 2 && segs[0] == "repositories" {
		segs = append([]string{"repos", "owner", "repo"}, segs[2:]...)
	}
	return segs, graphql
}

// forgeCleanPath accepts, on a GitLab route, a path whose only percent-encoding is "%2F"
// inside a segment (a project or group named by path) and whose decoded form is clean, so that
// no "..", "." or empty segment hides in it; it returns the decoded path and the escaped one
// with "%2F" upper-cased.
func forgeCleanPath(rt *apiRoute, u *url.URL) (string, string, bool) {
	if rt.forge == nil || rt.forge.kind != ForgeGitLab || u.RawPath == "" {
		return "", "", false
	}
	raw := u.RawPath
	for i := 0; i < len(raw); i++ {
		if raw[i] == '%' && (i+2 >= len(raw) || raw[i+1] != '2' || (raw[i+2] != 'F' && raw[i+2] != 'f')) {
			return "", "", false
		}
	}
	raw = strings.ReplaceAll(raw, "%2f", "%2F")
	if dec, err := url.PathUnescape(raw); err != nil || dec != u.Path {
		return "", "", false
	}
	p, clean := cleanPath(&url.URL{Path: u.Path})
	return p, raw, clean
}

// judgeGraphQLQuery judges a GraphQL GET from its query parameters.
func judgeGraphQLQuery(q url.Values, kind string) ([]forgeVerdict, error) {
	if len(q) == 0 {
		return []forgeVerdict{{class: ForgeRead}}, nil
	}
	for k, v := range q {
		if k != "query" && k != "operationName" && k != "variables" {
			return nil, fmt.Errorf("parameter %q: want query, operationName or variables", k)
		}
		if len(v) != 1 {
			return nil, fmt.Errorf("parameter %q given %d times", k, len(v))
		}
	}
	if q.Get("query") == "" {
		return nil, errors.New("no query text (persisted queries are refused)")
	}
	return judgeGraphQLDocument(q.Get("query"), kind)
}

// judgeGraphQLBody judges a GraphQL POST body: one request object or a batch of them.
func judgeGraphQLBody(body []byte, kind string) ([]forgeVerdict, error) {
	if !utf8.Valid(body) || !json.Valid(body) {
		return nil, errors.New("the body is not valid UTF-8 JSON")
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	var objs []json.RawMessage
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(body, &objs); err != nil {
			return nil, errors.New("a batch must be an array of request objects")
		}
		if len(objs) == 0 || len(objs) > maxGraphQLBatch {
			return nil, fmt.Errorf("a batch holds %d requests; want 1 to %d", len(objs), maxGraphQLBatch)
		}
	} else {
		objs = []json.RawMessage{body}
	}
	var out []forgeVerdict
	for i, o := range objs {
		query, err := graphQLQueryText(o)
		if err != nil {
			return nil, fmt.Errorf("request %d: %v", i+1, err)
		}
		vs, err := judgeGraphQLDocument(query, kind)
		if err != nil {
			return nil, fmt.Errorf("request %d: %v", i+1, err)
		}
		out = append(out, vs...)
	}
	return out, nil
}

// graphQLQueryText returns the query text of one request object, whose keys must be spelled
// exactly and appear once: encoding/json would match "QUERY" to a "query" field and keep the
// last of two, where the upstream may read the other.
func graphQLQueryText(raw json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	query := ""
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		key, _ := t.(string)
		if seen[key] {
			return "", fmt.Errorf("key %q given twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", err
		}
		switch key {
		case "query":
			if err := json.Unmarshal(v, &query); err != nil {
				return "", errors.New("\"query\" is not a string")
			}
		case "operationName":
			var s *string
			if err := json.Unmarshal(v, &s); err != nil {
				return "", errors.New("\"operationName\" is not a string")
			}
		case "variables":
			var m map[string]json.RawMessage
			if err := json.Unmarshal(v, &m); err != nil {
				return "", errors.New("\"variables\" is not an object")
			}
		default:
			return "", fmt.Errorf("key %q: want query, operationName or variables (persisted queries and extensions are refused)", key)
		}
	}
	if query == "" {
		return "", errors.New("no query text (persisted queries are refused)")
	}
	return query, nil
}

// judgeGraphQLDocument parses a GraphQL document and classifies every operation in it: a
// query is a read, a mutation's root fields each get their class.
func judgeGraphQLDocument(query, kind string) ([]forgeVerdict, error) {
	doc, gerr := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, maxGraphQLTokens)
	if gerr != nil {
		return nil, fmt.Errorf("the document does not parse: %v", gerr)
	}
	if len(doc.Operations) == 0 {
		return nil, errors.New("the document holds no operation")
	}
	frags := map[string]*ast.FragmentDefinition{}
	for _, f := range doc.Fragments {
		if frags[f.Name] != nil {
			return nil, fmt.Errorf("fragment %q defined twice", f.Name)
		}
		frags[f.Name] = f
	}
	var out []forgeVerdict
	for _, op := range doc.Operations {
		switch op.Operation {
		case ast.Query:
			out = append(out, forgeVerdict{class: ForgeRead})
		case ast.Mutation:
			names, err := rootFields(op.SelectionSet, frags, map[string]bool{}, 0)
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				c := githubMutation(n)
				if kind == ForgeGitLab {
					c = gitlabMutation(n)
				}
				out = append(out, forgeVerdict{class: c, what: "GraphQL mutation " + n})
			}
		default:
			return nil, fmt.Errorf("a %s operation is refused", op.Operation)
		}
	}
	return out, nil
}

// rootFields lists the names of the fields a selection set executes at its own level: its
// fields, and those of its inline fragments and fragment spreads, followed.
func rootFields(set ast.SelectionSet, frags map[string]*ast.FragmentDefinition, active map[string]bool, depth int) ([]string, error) {
	if depth > 32 {
		return nil, errors.New("fragments nested too deep")
	}
	var out []string
	for _, s := range set {
		var names []string
		var err error
		switch s := s.(type) {
		case *ast.Field:
			names = []string{s.Name}
		case *ast.InlineFragment:
			names, err = rootFields(s.SelectionSet, frags, active, depth+1)
		case *ast.FragmentSpread:
			f := frags[s.Name]
			if f == nil || active[s.Name] {
				return nil, fmt.Errorf("fragment %q is undefined or cycles", s.Name)
			}
			active[s.Name] = true
			names, err = rootFields(f.SelectionSet, frags, active, depth+1)
			delete(active, s.Name)
		default:
			err = fmt.Errorf("unknown selection %T", s)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	return out, nil
}
