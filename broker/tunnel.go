package broker

// Tunnel rules. A CONNECT request names host:port in authority form, carries no body, and (if
// it has a Host header) names the same destination. Once decided and dialled, bytes are relayed
// both ways by the kernel (splice between the two TCP sockets, no copy through user space),
// which is why the idle timeout is not a read deadline: one sweeper asks the kernel when data last
// moved on each tunnel's client socket (tcpidle_linux.go, tcpidle_darwin.go) and closes the
// tunnels idle too long.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// tunnelConns are the two ends of an open tunnel; up is nil for a client still sending requests.
type tunnelConns struct {
	client, up net.Conn
	idle       idleClock // only the sweeper touches it, under b.mu
}

// serveConnect decides a CONNECT request and, when allowed, relays the tunnel until it ends.
func (b *Broker) serveConnect(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request, start time.Time) (released bool) {
	e := Entry{Method: http.MethodConnect, Host: req.RequestURI}
	if req.ContentLength != 0 || len(req.TransferEncoding) > 0 {
		b.refuse(c, start, withReason(e, "body on CONNECT"), http.StatusBadRequest)
		return false
	}
	a, err := ParseAuthority(req.RequestURI, 0)
	if err != nil {
		b.refuse(c, start, withReason(e, "malformed authority"), http.StatusBadRequest)
		return false
	}
	e.Host, e.Port = a.Name(), int(a.Port)
	if h, ok := req.Header["Host"]; ok {
		if ha, err := ParseAuthority(h[0], a.Port); err != nil || ha != a {
			b.refuse(c, start, withReason(e, "host header does not match authority"), http.StatusBadRequest)
			return false
		}
	}
	if !b.authorized(req) {
		b.refuse(c, start, withReason(e, "missing or wrong proxy credentials"), http.StatusProxyAuthRequired)
		return false
	}
	if b.tunnels.Add(1) > int64(b.lim.MaxTunnels) {
		b.tunnels.Add(-1)
		b.refuse(c, start, withReason(e, "tunnel limit"), http.StatusTooManyRequests)
		return false
	}
	defer b.tunnels.Add(-1)
	v, ref := b.decide(ctx, a)
	if ref != nil {
		e.Addr = ref.addr
		b.refuse(c, start, withReason(e, ref.reason), ref.status)
		return false
	}
	up, addr, err := b.dialChecked(ctx, v.addrs, a.Port)
	if err != nil {
		b.logf("tunnel %s: %v", a, err)
		b.refuse(c, start, Entry{Method: e.Method, Host: e.Host, Port: e.Port, Rule: v.rule, Reason: "upstream connect failed"}, http.StatusBadGateway)
		return false
	}
	e.Addr, e.Rule, e.Decision, e.Status = netip.AddrPortFrom(addr, a.Port).String(), v.rule, Allow, http.StatusOK
	c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		up.Close()
		b.record(withReason(e, "client went away"), start)
		return false
	}
	// Bytes the client sent after its request, before our answer, go first. The reader (16 KiB)
	// goes back to the pool now rather than being held for the tunnel's lifetime.
	pre, _ := br.Peek(br.Buffered())
	pre = append([]byte(nil), pre...)
	putReader(br)
	e.BytesUp, e.BytesDown = b.relay(c, up, pre)
	b.record(e, start)
	return true
}

func withReason(e Entry, reason string) Entry {
	e.Reason = reason
	return e
}

// relay copies both ways until both directions end, half-closing each side when the other
// finishes sending, and returns the byte counts client→upstream and upstream→client.
func (b *Broker) relay(client, up net.Conn, pre []byte) (upN, downN int64) {
	b.track(client, &tunnelConns{client: client, up: up})
	defer up.Close()
	if len(pre) > 0 {
		n, err := up.Write(pre)
		upN += int64(n)
		if err != nil {
			return upN, 0
		}
	}
	done := make(chan int64, 1)
	go func() {
		n, err := io.Copy(up, client) // splice(2) between the two TCP sockets
		endCopy(up, client, err)
		done <- n
	}()
	downN, err := io.Copy(client, up)
	endCopy(client, up, err)
	return upN + <-done, downN
}

// endCopy half-closes dst after a clean end of src, or closes both after an error.
func endCopy(dst, src net.Conn, err error) {
	if err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	dst.Close()
}

func (b *Broker) track(c net.Conn, t *tunnelConns) {
	b.mu.Lock()
	b.active[c] = t
	b.mu.Unlock()
}

func (b *Broker) untrack(c net.Conn) {
	b.mu.Lock()
	delete(b.active, c)
	b.mu.Unlock()
}

// closeAll closes every client connection and tunnel (on shutdown).
func (b *Broker) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.active {
		t.client.Close()
		if t.up != nil {
			t.up.Close()
		}
	}
}

// sweepIdle closes tunnels with no data either way for TunnelIdleTimeout, until ctx ends.
func (b *Broker) sweepIdle(ctx context.Context) {
	every := min(max(b.lim.TunnelIdleTimeout/4, 10*time.Millisecond), 30*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b.mu.Lock()
		for _, t := range b.active {
			if t.up == nil {
				continue // not a tunnel: read deadlines bound it
			}
			if idle, ok := tcpIdle(t.client, &t.idle, time.Now()); ok && idle >= b.lim.TunnelIdleTimeout {
				t.client.Close()
				t.up.Close()
			}
		}
		b.mu.Unlock()
	}
}
