package broker

// Plain-HTTP forwarding rules. A request that is not CONNECT must use an absolute http:// URI
// without user info; if it also has a Host header, that header must name the same destination
// (a proxy and an origin reading different hosts out of one request is how filters are
// bypassed). The upstream gets the request in origin form, on a fresh connection to the checked
// address, without Proxy-Authorization, without hop-by-hop headers (and those the Connection
// header lists), re-framed by the standard library, and with "Connection: close". The answer
// goes back with its hop-by-hop headers stripped; the client's connection stays open for its
// next request, which is decided afresh.

import (
	"bufio"
	"context"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strings"
	"time"
)

// hopHeaders are never forwarded either way.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// stripHop removes hop-by-hop headers, including those named by Connection.
func stripHop(h http.Header) {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(textproto.CanonicalMIMEHeaderKey(name))
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// targetOf checks the request target of a forwarded request and returns its destination.
func targetOf(req *http.Request) (Authority, string) {
	u := req.URL
	if u.Scheme != "http" || u.Host == "" || u.User != nil || u.Opaque != "" {
		return Authority{}, "not an absolute http URI"
	}
	a, err := ParseAuthority(u.Host, 80)
	if err != nil {
		return Authority{}, "malformed authority"
	}
	if h, ok := req.Header["Host"]; ok {
		if ha, err := ParseAuthority(h[0], 80); err != nil || ha != a {
			return a, "host header does not match URI"
		}
	}
	return a, ""
}

// serveHTTP decides and forwards one plain-HTTP request; it reports whether the client
// connection may carry another request.
func (b *Broker) serveHTTP(ctx context.Context, dc *deadlineConn, br *bufio.Reader, req *http.Request, start time.Time) bool {
	e := Entry{Method: req.Method, Host: req.URL.Host}
	a, bad := targetOf(req)
	if a.Port != 0 {
		e.Host, e.Port = a.Name(), int(a.Port)
	}
	if bad != "" {
		b.refuse(dc, start, withReason(e, bad), http.StatusBadRequest)
		return false
	}
	if !b.authorized(req) {
		b.refuse(dc, start, withReason(e, "missing or wrong proxy credentials"), http.StatusProxyAuthRequired)
		return false
	}
	if rt := b.api[a.Host]; rt != nil && a.Host != "" {
		if rt.git != nil {
			return b.serveGit(ctx, dc, req, rt, e, start)
		}
		return b.serveAPI(ctx, dc, req, rt, e, start)
	}
	v, ref := b.decide(ctx, a)
	if ref != nil {
		e.Addr = ref.addr
		b.refuse(dc, start, withReason(e, ref.reason), ref.status)
		return false
	}
	up, addr, err := b.dialChecked(ctx, v.addrs, a.Port)
	if err != nil {
		b.logf("forward %s: %v", a, err)
		e.Rule = v.rule
		b.refuse(dc, start, withReason(e, "upstream connect failed"), http.StatusBadGateway)
		return false
	}
	defer up.Close()
	e.Addr, e.Rule = netip.AddrPortFrom(addr, a.Port).String(), v.rule
	continueIfExpected(dc, req)
	return b.exchange(dc, &deadlineConn{Conn: up}, outgoing(req, a, req.URL), req.Close, e, start, nil)
}

// outgoing builds the origin-form request sent upstream.
func outgoing(req *http.Request, a Authority, u *url.URL) *http.Request {
	h := req.Header.Clone()
	stripHop(h)
	h.Del("Host")
	h.Del("Expect") // the body is sent at once; an interim 100 Continue is skipped below
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""} // keep the standard library from adding its own
	}
	host := a.Name()
	if a.Addr.Is6() {
		host = "[" + host + "]"
	}
	if a.Port != 80 {
		host = a.String()
	}
	return &http.Request{
		Method: req.Method, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		URL:    &url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery},
		Header: h, Host: host, Close: true,
		Body: req.Body, ContentLength: req.ContentLength, TransferEncoding: req.TransferEncoding,
	}
}

// exchange sends out upstream, relays the answer to the client and logs the attempt.
// clientClose is set when the client asked to close after this request; onStatus, when set,
// learns the upstream's status before the answer is relayed.
func (b *Broker) exchange(dc, up *deadlineConn, out *http.Request, clientClose bool, e Entry, start time.Time, onStatus func(int)) bool {
	written := dc.nwrite
	fail := func(reason string, status int) bool {
		e.BytesUp = up.nwrite
		b.refuse(dc, start, withReason(e, reason), status)
		return false
	}
	up.extend = b.lim.IdleTimeout
	if err := out.Write(up); err != nil {
		return fail("upstream write failed", http.StatusBadGateway)
	}
	up.extend = 0
	up.SetReadDeadline(time.Now().Add(b.lim.ResponseTimeout))
	ubr := bufio.NewReader(up)
	resp, err := http.ReadResponse(ubr, out)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(ubr, out)
	}
	if err != nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return fail("bad or no upstream response", http.StatusBadGateway)
	}
	defer resp.Body.Close()
	if onStatus != nil {
		onStatus(resp.StatusCode)
	}
	up.extend = b.lim.IdleTimeout
	stripHop(resp.Header)
	framed := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0
	resp.Close = !framed || clientClose
	werr := resp.Write(dc)
	e.Decision, e.Status = Allow, resp.StatusCode
	e.BytesUp, e.BytesDown = up.nwrite, dc.nwrite-written
	b.record(e, start)
	return werr == nil && !resp.Close
}

// continueIfExpected answers "Expect: 100-continue" once the request is decided, so that a
// client waiting for it sends its body now instead of after its own timeout.
func continueIfExpected(dc *deadlineConn, req *http.Request) {
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") && req.ContentLength != 0 {
		dc.Write([]byte("HTTP/1.1 100 Continue\r\n\r\n"))
	}
}
