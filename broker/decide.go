package broker

// Decision rules, in order; the first that applies decides:
//  1. A literal IP destination is allowed only by an address entry covering it and the port.
//  2. A name is allowed only by a name entry (exact or wildcard) for the port; a name that is
//     not allowed is never resolved, so a refused request leaks nothing through DNS.
//  3. An allowed name is resolved once, on the host. Every address it resolves to must be either
//     public (IsPublic) or covered by an address entry for the port; if any one is not, the whole
//     request is refused: a name that resolves to a public and a private address at once is a
//     rebinding attempt, and dialling only its good half would hide that from the log.
//  4. Only the addresses checked in step 3 are dialled, in the resolver's order.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// refusal is a decided "no": the status, the X-Corral code and the logged reason.
type refusal struct {
	status int
	reason string
	addr   string
}

// verdict is a decided "yes": the rule and the checked addresses to dial.
type verdict struct {
	rule  string
	addrs []netip.Addr
}

// decide applies the decision rules to a normalised destination.
func (b *Broker) decide(ctx context.Context, a Authority) (verdict, *refusal) {
	if a.Addr.IsValid() {
		if r, ok := b.allow.MatchAddr(a.Addr, a.Port); ok {
			return verdict{rule: r.Text, addrs: []netip.Addr{a.Addr}}, nil
		}
		reason := "address not in allow-list"
		if !IsPublic(a.Addr) {
			reason = "forbidden address"
		}
		return verdict{}, &refusal{status: http.StatusForbidden, reason: reason, addr: a.Addr.String()}
	}
	nameRule, ok := b.allow.MatchName(a.Host, a.Port)
	if !ok {
		return verdict{}, &refusal{status: http.StatusForbidden, reason: "host not in allow-list"}
	}
	rctx, cancel := context.WithTimeout(ctx, b.lim.ResolveTimeout)
	defer cancel()
	addrs, pinned := b.testHosts[a.Host] // testhosts.go: a test seam, loopback only
	var err error
	if !pinned {
		addrs, err = b.resolver.LookupNetIP(rctx, "ip", a.Host)
	}
	if err != nil || len(addrs) == 0 {
		return verdict{}, &refusal{status: http.StatusBadGateway, reason: "name did not resolve"}
	}
	rules := []string{nameRule.Text}
	for _, addr := range addrs {
		if r, ok := b.allow.MatchAddr(addr, a.Port); ok {
			rules = appendNew(rules, r.Text)
			continue
		}
		if !IsPublic(addr) && !pinned {
			return verdict{}, &refusal{status: http.StatusForbidden, reason: "name resolves to a forbidden address", addr: addr.String()}
		}
	}
	return verdict{rule: strings.Join(rules, ", "), addrs: addrs}, nil
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// dialChecked dials the checked addresses in order and returns the first connection.
func (b *Broker) dialChecked(ctx context.Context, addrs []netip.Addr, port uint16) (net.Conn, netip.Addr, error) {
	var last error
	for _, addr := range addrs {
		network := "tcp4"
		if addr.Is6() {
			network = "tcp6"
		}
		dctx, cancel := context.WithTimeout(ctx, b.lim.DialTimeout)
		c, err := b.dial(dctx, network, netip.AddrPortFrom(addr, port).String())
		cancel()
		if err == nil {
			return c, addr, nil
		}
		last = err
	}
	return nil, netip.Addr{}, fmt.Errorf("dial: %w", last)
}

// codes are the X-Corral header values and the generic bodies of refusals: short, fixed, and
// free of anything the broker learned (no addresses, no rule names).
var codes = map[int][2]string{
	http.StatusBadRequest:                  {"bad-request", "malformed proxy request"},
	http.StatusForbidden:                   {"denied", "destination not allowed"},
	http.StatusProxyAuthRequired:           {"auth", "proxy credentials required"},
	http.StatusRequestTimeout:              {"timeout", "request too slow"},
	http.StatusTooManyRequests:             {"limit", "too many requests"},
	http.StatusRequestHeaderFieldsTooLarge: {"too-large", "request header too large"},
	http.StatusBadGateway:                  {"upstream", "destination unreachable"},
	http.StatusMethodNotAllowed:            {"denied", "method or path not allowed"},
}

// refuse logs e as a denial, then answers status with a generic body (the caller closes).
func (b *Broker) refuse(w io.Writer, start time.Time, e Entry, status int) {
	e.Decision, e.Status = Deny, status
	b.record(e, start)
	writeRefusal(w, status)
}

// writeRefusal writes the short answer for status, with a short write deadline when w is a
// connection, so that a client that does not read cannot hold the goroutine.
func writeRefusal(w io.Writer, status int) {
	c := codes[status]
	if c[0] == "" {
		c = [2]string{"error", "request refused"}
	}
	body := "corral: " + c[1] + "\n"
	var sb strings.Builder
	fmt.Fprintf(&sb, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	if status == http.StatusProxyAuthRequired {
		sb.WriteString("Proxy-Authenticate: Basic realm=\"corral\"\r\n")
	}
	fmt.Fprintf(&sb, "X-Corral: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", c[0], len(body), body)
	if nc, ok := w.(net.Conn); ok {
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	}
	io.WriteString(w, sb.String())
}
