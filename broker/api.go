package broker

// API broker rules. A route, from trusted configuration only, lets the box call one upstream API
// with a credential that stays on the host: the box sends plain HTTP through the broker to
// http://NAME.api.corral/PATH, and the broker
//   - answers 405 unless METHOD and PATH match one of the route's "METHOD /path" patterns (a
//     pattern ending in "/*" matches every path below it); paths must already be clean (no "..",
//     "//" or percent-encoded bytes that would change their meaning upstream);
//   - on a forge route (forge.go), classes the request (read, merge, push, protection, write)
//     and refuses the classes the route does not allow, before any credential is added;
//   - drops any header the box sent under the credential's name, adds the credential, and sends
//     the request to the route's upstream on a connection to a checked address (public, or named
//     by an address entry of the allow-list), over TLS for https upstreams;
//   - logs method, path, route and status; never the credential;
//   - a login route (APIRoute.Login) takes the credential from a host-held subscription login
//     (package login) at every request instead of a fixed value: refreshed once under the
//     login's lock when it has expired, and marked stale when the upstream answers 401, so the
//     next request (of any box) refreshes it.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/git-corral/git-corral/login"
)

// APISuffix is the host suffix under which the box reaches API routes.
const APISuffix = ".api.corral"

// APIRoute is one API broker route, from trusted configuration only.
type APIRoute struct {
	// Name is the route's name ([a-z0-9-]); the box calls http://NAME.api.corral/PATH.
	Name string `json:"name"`
	// Upstream is the base URL requests go to, such as "https://api.github.com".
	Upstream string `json:"upstream"`
	// Header and Value are the credential added to every forwarded request, such as
	// "Authorization" and "Bearer …". The value is held on the host and never logged.
	Header string `json:"header"`
	Value  string `json:"value"`
	// Login, when set, is the file of a host-held login (login.Path): the header's value is then
	// Value (a prefix such as "Bearer ", may be empty) followed by the login's current access
	// token, read at every request. Only the file's name travels to the broker child.
	Login string `json:"login,omitempty"`
	// Allow are the permitted requests, "METHOD /path" or "METHOD /prefix/*".
	Allow []string `json:"allow"`
	// RootCAs verifies the upstream's certificate; nil means the host's roots (tests set it).
	RootCAs *x509.CertPool `json:"-"`
	// Forge, when set ("github", "gitlab"), makes this a forge's API route (forge.go): after
	// the allow patterns, every request is classified (read, merge, push, protection, write)
	// and any but a read is refused unless ForgeAllow lists its class. A "gitlab" route also
	// accepts "%2F" inside a path segment (a project named by its path).
	Forge      string   `json:"forge,omitempty"`
	ForgeAllow []string `json:"forgeAllow,omitempty"`
	// Git, when set, makes this a git route (git.go): Name is then the git host as git_tokens
	// names it (HOST or HOST:PORT), Upstream must be https://NAME, Allow is unused (git
	// smart-HTTP requests only), and the box calls http://HOST.git.corral/REPO.
	Git *GitRules `json:"git,omitempty"`
}

// apiRoute is a checked route.
type apiRoute struct {
	name     string
	upstream Authority
	tls      bool
	base     string
	header   string
	value    string
	login    *login.Source
	allow    [][2]string
	roots    *x509.CertPool
	// forge is set for a forge's API route: its kind and the classes it lets through.
	forge *forgeRules
	// git and boxPort are set for git routes: the push rules, and the port the box calls.
	git     *GitRules
	boxPort uint16
}

// boxHost is the authority the box calls a git route at.
func (rt *apiRoute) boxHost() string {
	h := rt.upstream.Host + GitSuffix
	if rt.boxPort != 80 {
		h += fmt.Sprintf(":%d", rt.boxPort)
	}
	return h
}

// parseRoutes checks every route and keys them by the host the box uses.
func parseRoutes(routes []APIRoute, lo login.Options) (map[string]*apiRoute, error) {
	out := map[string]*apiRoute{}
	var errs []error
	for i, r := range routes {
		if r.Git != nil {
			rt, err := parseGitRoute(r)
			if err == nil && out[rt.upstream.Host+GitSuffix] != nil {
				err = errors.New("a second git route for the same host name")
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("git route %d %q: %w", i+1, r.Name, err))
				continue
			}
			out[rt.upstream.Host+GitSuffix] = rt
			continue
		}
		rt, err := parseRoute(r, lo)
		if err != nil {
			errs = append(errs, fmt.Errorf("api route %d %q: %w", i+1, r.Name, err))
			continue
		}
		out[rt.name+APISuffix] = rt
	}
	return out, errors.Join(errs...)
}

func parseRoute(r APIRoute, lo login.Options) (*apiRoute, error) {
	if r.Name == "" || !validRouteName(r.Name) {
		return nil, errors.New("name must be lower-case letters, digits and '-'")
	}
	u, err := url.Parse(r.Upstream)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("upstream %q must be an http(s) URL without user, query or fragment", r.Upstream)
	}
	port := uint16(443)
	if u.Scheme == "http" {
		port = 80
	}
	a, err := ParseAuthority(u.Host, port)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", r.Upstream, err)
	}
	if !httpguts.ValidHeaderFieldName(r.Header) || !httpguts.ValidHeaderFieldValue(r.Value) || (r.Value == "" && r.Login == "") {
		return nil, errors.New("header must be a valid header name and value a non-empty value without line breaks")
	}
	rt := &apiRoute{name: r.Name, upstream: a, tls: u.Scheme == "https", base: strings.TrimSuffix(u.Path, "/"),
		header: http.CanonicalHeaderKey(r.Header), value: r.Value, roots: r.RootCAs}
	if r.Login != "" {
		if !filepath.IsAbs(r.Login) {
			return nil, fmt.Errorf("login %q must be the absolute path of a host-held login", r.Login)
		}
		rt.login = login.NewSource(r.Login, lo)
	}
	for _, p := range r.Allow {
		method, pth, ok := strings.Cut(strings.TrimSpace(p), " ")
		if !ok || method == "" || method != strings.ToUpper(method) || !strings.HasPrefix(pth, "/") {
			return nil, fmt.Errorf("allow pattern %q must be \"METHOD /path\" or \"METHOD /prefix/*\"", p)
		}
		rt.allow = append(rt.allow, [2]string{method, pth})
	}
	if len(rt.allow) == 0 {
		return nil, errors.New("no allow patterns: the route would refuse everything")
	}
	if rt.forge, err = parseForge(r.Forge, r.ForgeAllow); err != nil {
		return nil, err
	}
	return rt, nil
}

// parseGitRoute checks a git route: its name is the git host, its upstream https://NAME, its
// header and value the credential, its patterns well formed.
func parseGitRoute(r APIRoute) (*apiRoute, error) {
	a, err := ParseAuthority(r.Name, 443)
	if err != nil || a.Addr.IsValid() || r.Name != strings.ToLower(r.Name) || r.Upstream != "https://"+r.Name {
		return nil, fmt.Errorf("must name a git host (HOST or HOST:PORT, lower case) and have the upstream https://NAME, not %q", r.Upstream)
	}
	if !httpguts.ValidHeaderFieldName(r.Header) || !httpguts.ValidHeaderFieldValue(r.Value) || r.Value == "" {
		return nil, errors.New("header must be a valid header name and value a non-empty value without line breaks")
	}
	g := *r.Git
	for _, p := range append(append([]string{}, g.Push...), g.Narrow...) {
		if err := checkRefPattern(p); err != nil {
			return nil, err
		}
	}
	port := a.Port
	if port == 443 {
		port = 80
	}
	return &apiRoute{name: r.Name, upstream: a, tls: true, header: http.CanonicalHeaderKey(r.Header), value: r.Value,
		roots: r.RootCAs, git: &g, boxPort: port}, nil
}

func validRouteName(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return len(s) <= 63 && s[0] != '-'
}

// permits reports whether method and a clean path match one of the route's patterns.
func (rt *apiRoute) permits(method, p string) bool {
	for _, a := range rt.allow {
		if a[0] != method {
			continue
		}
		if prefix, ok := strings.CutSuffix(a[1], "/*"); ok {
			if strings.HasPrefix(p, prefix+"/") {
				return true
			}
		} else if a[1] == p {
			return true
		}
	}
	return false
}

// cleanPath returns the request path when it is already in clean form.
func cleanPath(u *url.URL) (string, bool) {
	p := u.Path
	if u.RawPath != "" || p == "" || !strings.HasPrefix(p, "/") {
		return "", false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return p, c == p
}

// serveAPI forwards one request on an API route; it reports whether the client connection may
// carry another request.
func (b *Broker) serveAPI(ctx context.Context, dc *deadlineConn, req *http.Request, rt *apiRoute, e Entry, start time.Time) bool {
	e.Route = rt.name
	p, clean := cleanPath(req.URL)
	raw := p
	if !clean {
		p, raw, clean = forgeCleanPath(rt, req.URL)
	}
	if rt.forge != nil && strings.Contains(p, "%") {
		clean = false // "%25": an upstream that decoded twice would read another path than was judged
	}
	e.Path = raw
	if !clean || e.Port != 80 || !rt.permits(req.Method, p) {
		if !clean {
			e.Path = req.URL.EscapedPath()
		}
		b.refuse(dc, start, withReason(e, "method or path not allowed on api route"), http.StatusMethodNotAllowed)
		return false
	}
	if rt.forge != nil {
		if !b.serveForge(dc, req, rt, &e, p, raw, start) {
			return false
		}
	}
	u := &url.URL{Path: rt.base + p, RawQuery: req.URL.RawQuery}
	if raw != p {
		u.RawPath = rt.base + raw
	}
	return b.forwardRoute(ctx, dc, rt, req, outgoing(req, rt.upstream, u), e, start)
}

// forwardRoute sends out to rt's upstream, on a connection to a checked address (over TLS for
// https upstreams), with the route's credential in place of any the box sent, and relays the
// answer; it reports whether the client connection may carry another request. req is the
// box's request, answered "100 Continue" when it asks for that.
func (b *Broker) forwardRoute(ctx context.Context, dc *deadlineConn, rt *apiRoute, req, out *http.Request, e Entry, start time.Time) bool {
	v, ref := b.decideUpstream(ctx, rt.upstream)
	if ref != nil {
		e.Addr = ref.addr
		b.refuse(dc, start, withReason(e, "api upstream: "+ref.reason), ref.status)
		return false
	}
	raw, addr, err := b.dialChecked(ctx, v.addrs, rt.upstream.Port)
	if err != nil {
		b.logf("api route %s: %v", rt.name, err)
		b.refuse(dc, start, withReason(e, "upstream connect failed"), http.StatusBadGateway)
		return false
	}
	up := raw
	if rt.tls {
		tc := tls.Client(raw, &tls.Config{ServerName: rt.upstream.Name(), RootCAs: rt.roots, MinVersion: tls.VersionTLS12})
		hctx, cancel := context.WithTimeout(ctx, b.lim.DialTimeout)
		err = tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			raw.Close()
			b.logf("api route %s: tls: %v", rt.name, err)
			b.refuse(dc, start, withReason(e, "upstream tls failed"), http.StatusBadGateway)
			return false
		}
		up = tc
	}
	defer up.Close()
	if e.Rule == "" {
		e.Rule = "api route " + rt.name
	}
	e.Addr = netip.AddrPortFrom(addr, rt.upstream.Port).String()
	if (rt.tls && rt.upstream.Port == 443) || (!rt.tls && rt.upstream.Port == 80) {
		out.Host = hostOnly(rt.upstream)
	}
	value, onStatus, ok := b.routeValue(ctx, rt)
	if !ok {
		b.refuse(dc, start, withReason(e, "host-held login unusable (see the broker log)"), http.StatusBadGateway)
		return false
	}
	out.Header.Del(rt.header)
	out.Header.Set(rt.header, value)
	continueIfExpected(dc, req)
	return b.exchange(dc, &deadlineConn{Conn: up}, out, req.Close, e, start, onStatus)
}

// routeValue is the credential rt adds: its fixed value, or the prefix and the current token
// of its login, with a hook that marks that token stale when the upstream answers 401 (the
// failing request is not replayed: its body is already gone; the next one gets a new token).
func (b *Broker) routeValue(ctx context.Context, rt *apiRoute) (string, func(int), bool) {
	if rt.login == nil {
		return rt.value, nil, true
	}
	tok, err := rt.login.Token(ctx)
	if err != nil {
		b.logf("api route %s: %v", rt.name, err)
		return "", nil, false
	}
	return rt.value + tok, func(status int) {
		if status == http.StatusUnauthorized {
			if _, err := rt.login.Invalidate(ctx, tok); err != nil {
				b.logf("api route %s: upstream refused the login's token: %v", rt.name, err)
			}
		}
	}, true
}

func hostOnly(a Authority) string {
	if a.Addr.Is6() {
		return "[" + a.Name() + "]"
	}
	return a.Name()
}

// decideUpstream checks a route's upstream: the route itself names the host, so only the
// address rules apply.
func (b *Broker) decideUpstream(ctx context.Context, a Authority) (verdict, *refusal) {
	addrs := []netip.Addr{a.Addr}
	if !a.Addr.IsValid() {
		rctx, cancel := context.WithTimeout(ctx, b.lim.ResolveTimeout)
		defer cancel()
		var err error
		if addrs, err = b.resolver.LookupNetIP(rctx, "ip", a.Host); err != nil || len(addrs) == 0 {
			return verdict{}, &refusal{status: http.StatusBadGateway, reason: "name did not resolve"}
		}
	}
	for _, addr := range addrs {
		if _, ok := b.allow.MatchAddr(addr, a.Port); !ok && !IsPublic(addr) {
			return verdict{}, &refusal{status: http.StatusForbidden, reason: "forbidden address", addr: addr.String()}
		}
	}
	return verdict{addrs: addrs}, nil
}
