package broker

// Connection rules. Each request on a connection is read, checked and decided on its own, so a
// keep-alive connection cannot carry an undecided request past the broker. Before the standard
// library parses a request, its raw header block is checked for the framing that request
// smuggling relies on: obsolete line folding, more than one Content-Length, Content-Length
// together with Transfer-Encoding, any Transfer-Encoding other than a single "chunked", more
// than one Host. Every refusal closes the connection, so nothing the refused request carried is
// ever read as the next request.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// deadlineConn is a connection with idle timeouts and byte counts: when extend is set, every
// read or write pushes its deadline that far ahead (bodies); otherwise the deadline set by the
// caller stands (request headers, response headers).
type deadlineConn struct {
	net.Conn
	extend        time.Duration
	nread, nwrite int64
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	if d.extend > 0 {
		d.Conn.SetReadDeadline(time.Now().Add(d.extend))
	}
	n, err := d.Conn.Read(p)
	d.nread += int64(n)
	return n, err
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	if d.extend > 0 {
		d.Conn.SetWriteDeadline(time.Now().Add(d.extend))
	}
	n, err := d.Conn.Write(p)
	d.nwrite += int64(n)
	return n, err
}

var readerPool sync.Pool

func (b *Broker) getReader(c net.Conn) *bufio.Reader {
	if br, ok := readerPool.Get().(*bufio.Reader); ok && br.Size() == b.lim.MaxHeaderBytes {
		br.Reset(c)
		return br
	}
	return bufio.NewReaderSize(c, b.lim.MaxHeaderBytes)
}

func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readerPool.Put(br)
}

// serveConn runs one client connection: requests until the client is done, a refusal, or a
// tunnel takes the connection over.
func (b *Broker) serveConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	if b.conns.Add(1) > int64(b.lim.MaxConns) {
		defer b.conns.Add(-1)
		b.refuse(c, time.Now(), Entry{Reason: "too many connections"}, http.StatusTooManyRequests)
		return
	}
	defer b.conns.Add(-1)
	b.track(c, &tunnelConns{client: c}) // so that shutdown can close it
	defer b.untrack(c)
	dc := &deadlineConn{Conn: c}
	br := b.getReader(dc)
	for ctx.Err() == nil {
		req, start, ok := b.readRequest(dc, br)
		if !ok {
			break
		}
		if req.Method == http.MethodConnect {
			if !b.serveConnect(ctx, c, br, req, start) {
				putReader(br)
			}
			return
		}
		if !b.serveHTTP(ctx, dc, br, req, start) {
			break
		}
	}
	putReader(br)
}

// readRequest waits for a request, checks its framing and parses it. It answers and logs
// malformed, oversized and slow requests itself; ok is false when the connection must close.
func (b *Broker) readRequest(dc *deadlineConn, br *bufio.Reader) (*http.Request, time.Time, bool) {
	dc.extend = 0
	dc.SetReadDeadline(time.Now().Add(b.lim.IdleTimeout))
	if _, err := br.Peek(1); err != nil {
		return nil, time.Time{}, false // closed or idle between requests: nothing to log
	}
	start := time.Now()
	dc.SetReadDeadline(start.Add(b.lim.HeaderTimeout))
	head, err := peekHeader(br)
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		b.refuse(dc, start, Entry{Reason: "request header too large"}, http.StatusRequestHeaderFieldsTooLarge)
		return nil, start, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.refuse(dc, start, Entry{Reason: "request header too slow"}, http.StatusRequestTimeout)
		return nil, start, false
	case err != nil:
		return nil, start, false
	}
	if !b.bucket.take() {
		b.refuse(dc, start, Entry{Reason: "request rate limit"}, http.StatusTooManyRequests)
		return nil, start, false
	}
	host, reason := checkFraming(head)
	if reason != "" {
		b.refuse(dc, start, Entry{Reason: reason}, http.StatusBadRequest)
		return nil, start, false
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		method, target := requestLine(head)
		b.refuse(dc, start, Entry{Method: method, Host: target, Reason: "unparsable request"}, http.StatusBadRequest)
		return nil, start, false
	}
	if host != nil {
		req.Header["Host"] = host // ReadRequest drops it; the target checks compare it
	}
	dc.extend = b.lim.IdleTimeout
	return req, start, true
}

// peekHeader returns the buffered request line and headers up to and including the blank line,
// without consuming them. It fails with bufio.ErrBufferFull when they do not fit the buffer.
func peekHeader(br *bufio.Reader) ([]byte, error) {
	for n := 1; ; n = br.Buffered() + 1 {
		if n > br.Size() {
			return nil, bufio.ErrBufferFull
		}
		if _, err := br.Peek(n); err != nil {
			return nil, err
		}
		buf, _ := br.Peek(br.Buffered())
		if i := headerEnd(buf); i >= 0 {
			return buf[:i], nil
		}
	}
}

// headerEnd returns the length of the header block in buf (through its blank line), or -1.
func headerEnd(buf []byte) int {
	for off := 0; ; {
		i := bytes.IndexByte(buf[off:], '\n')
		if i < 0 {
			return -1
		}
		line := buf[off : off+i]
		off += i + 1
		if len(line) == 0 || len(line) == 1 && line[0] == '\r' {
			return off
		}
	}
}

// requestLine returns the method and target of a raw request line, for the log.
func requestLine(head []byte) (method, target string) {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 2 {
		return "", ""
	}
	return f[0], f[1]
}

// checkFraming returns why a raw header block has ambiguous framing, or "", and the value of
// its Host header (nil when there is none).
func checkFraming(head []byte) (hostValue []string, reason string) {
	lines := strings.Split(strings.TrimRight(string(head), "\r\n"), "\n")
	var cl, te, host int
	for _, line := range lines[1:] {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, "obsolete header line folding"
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, "malformed header line"
		}
		switch strings.ToLower(name) {
		case "content-length":
			cl++
		case "transfer-encoding":
			te++
			if !strings.EqualFold(strings.TrimSpace(value), "chunked") {
				return nil, "unsupported transfer-encoding"
			}
		case "host":
			host++
			hostValue = []string{strings.TrimSpace(value)}
		}
	}
	switch {
	case cl > 1:
		return nil, "duplicate content-length"
	case cl > 0 && te > 0:
		return nil, "content-length with transfer-encoding"
	case te > 1:
		return nil, "duplicate transfer-encoding"
	case host > 1:
		return nil, "duplicate host"
	}
	return hostValue, ""
}

// authorized reports whether req carries the box's secret as Proxy-Authorization Basic
// credentials. The user name is ignored; the password is compared in constant time (hashed, so
// not even its length leaks).
func (b *Broker) authorized(req *http.Request) bool {
	vals := req.Header.Values("Proxy-Authorization")
	if len(vals) != 1 {
		return false
	}
	scheme, enc, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return false
	}
	_, pass, ok := strings.Cut(string(raw), ":")
	sum := sha256.Sum256([]byte(pass))
	return subtle.ConstantTimeCompare(sum[:], b.secretSum[:]) == 1 && ok
}
