package broker

// Git route rules. A git route, from trusted configuration only (git_tokens in broker mode),
// lets the box's git speak smart HTTP to one git host with a credential that stays on the host:
// the box sends plain HTTP through the broker to http://HOST.git.corral/REPO (port 80 for an
// upstream on 443, the upstream's port otherwise), and the broker
//   - forwards fetches (GET REPO/info/refs?service=git-upload-pack, POST REPO/git-upload-pack,
//     its body as git sent it, identity or gzip) and the push advertisement (GET
//     REPO/info/refs?service=git-receive-pack), adding the credential;
//   - reads a push (POST REPO/git-receive-pack) whole before anything reaches the upstream: an
//     uncompressed body only (Content-Encoding absent or identity: the broker judges what it
//     reads, and git never compresses a push), its commands parsed (gitproto.go) and its pack
//     scanned (gitpack.go), then decides every ref: the ref must match a git_push pattern (and,
//     when the repository narrowed them, one of its patterns too); a delete needs
//     git_push_delete; an update of an existing ref must be a fast-forward the pack proves,
//     unless git_push_force. One refused ref refuses the whole push (all-or-nothing, so that a
//     --mirror or --all push is never half applied). Only a push with every ref allowed is sent,
//     with the credential; a refused one is answered by the broker itself as receive-pack would
//     (unpack ok, "ng REF reason" for each ref), so git prints each reason, and the patterns
//     this box may push to, on its stderr;
//   - answers GET /.corral/policy itself, with those rules as text, so the box can read them
//     before it tries;
//   - refuses every other method and path (405, with a text body git shows): the dumb HTTP
//     protocol and Git LFS are not forwarded;
//   - logs every request (method, repository path, route, status) and, for a push, each ref with
//     its old and new object and its verdict; never the credential.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// GitSuffix is the host suffix under which the box reaches git routes.
const GitSuffix = ".git.corral"

// PolicyPath is the path of a git route that answers with its push rules.
const PolicyPath = "/.corral/policy"

// GitRules are a git route's push rules, from trusted configuration only.
type GitRules struct {
	// Push are the ref patterns a push may update (git_push, trusted layers): a full ref name
	// such as "refs/heads/main", or one ending in "*", which matches any rest of the name
	// ("refs/heads/corral/*"). None: no push is allowed.
	Push []string `json:"push"`
	// Narrowed is set when the repository's configuration named git_push; a ref must then also
	// match one of Narrow (possibly none).
	Narrowed bool     `json:"narrowed,omitempty"`
	Narrow   []string `json:"narrow,omitempty"`
	// Delete allows deleting a ref the patterns allow (git_push_delete).
	Delete bool `json:"delete,omitempty"`
	// Force allows updates the broker cannot prove to be fast-forwards (git_push_force).
	Force bool `json:"force,omitempty"`
}

// RefDecision is the verdict on one ref of a push, as the egress log records it.
type RefDecision struct {
	Ref      string `json:"ref"`
	Old      string `json:"old"`
	New      string `json:"new"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// checkRefPattern checks one git_push pattern: a ref name under refs/, with at most one "*",
// at its end.
func checkRefPattern(p string) error {
	name, star := strings.CutSuffix(p, "*")
	if strings.Contains(name, "*") {
		return fmt.Errorf("ref pattern %q: a \"*\" is allowed only at the end", p)
	}
	probe := name
	if star {
		probe += "x"
	}
	if err := checkRefName(probe); err != nil || (star && !strings.HasPrefix(name, "refs/")) {
		return fmt.Errorf("ref pattern %q: not a ref name under refs/ (optionally ending in \"*\")", p)
	}
	return nil
}

// refMatch reports whether ref matches pattern.
func refMatch(pattern, ref string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(ref, prefix)
	}
	return pattern == ref
}

func matchAny(patterns []string, ref string) bool {
	for _, p := range patterns {
		if refMatch(p, ref) {
			return true
		}
	}
	return false
}

// mayPush reports whether the patterns allow ref.
func (g *GitRules) mayPush(ref string) bool {
	return matchAny(g.Push, ref) && (!g.Narrowed || matchAny(g.Narrow, ref))
}

// allowedText names what the box may push, for refusals and the policy page.
func (g *GitRules) allowedText() string {
	switch {
	case len(g.Push) == 0:
		return "no ref (git_push is empty)"
	case g.Narrowed && len(g.Narrow) == 0:
		return "no ref (the repository's git_push is empty)"
	case g.Narrowed:
		return "refs matching both " + strings.Join(g.Push, " ") + " (git_push) and " + strings.Join(g.Narrow, " ") + " (the repository's git_push)"
	}
	return "refs matching " + strings.Join(g.Push, " ") + " (git_push)"
}

// policyText is the answer to GET /.corral/policy.
func (g *GitRules) policyText(host string) string {
	onOff := func(b bool, yes, no string) string {
		if b {
			return yes
		}
		return no
	}
	return fmt.Sprintf("git corral push policy for %s (through the broker; the credential stays on the host)\n"+
		"fetch and clone: allowed\n"+
		"push: %s\n"+
		"delete a ref: %s\n"+
		"non-fast-forward update: %s\n"+
		"a push is applied only when every ref in it is allowed\n",
		host, g.allowedText(),
		onOff(g.Delete, "allowed for those refs (git_push_delete)", "refused (git_push_delete is off)"),
		onOff(g.Force, "allowed for those refs (git_push_force)", "refused (git_push_force is off); an update must add commits on top of the ref's current commit"))
}

// judge decides every command of a push; pack holds the commits the push carries. ok is true
// only when every ref is allowed.
func (g *GitRules) judge(cmds []RefUpdate, pack packCommits) ([]RefDecision, bool) {
	out := make([]RefDecision, len(cmds))
	ok := true
	for i, c := range cmds {
		d := RefDecision{Ref: c.Ref, Old: c.Old, New: c.New, Decision: Allow}
		switch {
		case !g.mayPush(c.Ref):
			d.Reason = "corral: " + c.Ref + " is not a ref this box may push; it may push " + g.allowedText()
		case isZeroOID(c.New) && !g.Delete:
			d.Reason = "corral: deleting " + c.Ref + " is refused (git_push_delete is off)"
		case !isZeroOID(c.Old) && !isZeroOID(c.New) && !g.Force && !pack.fastForward(c.Old, c.New):
			d.Reason = "corral: " + c.Ref + " is not a fast-forward the broker can prove (git_push_force is off): push commits on top of its current commit, or push to a new branch"
		}
		if d.Reason != "" {
			d.Decision, ok = Deny, false
		}
		out[i] = d
	}
	if !ok {
		for i := range out {
			if out[i].Decision == Allow {
				out[i].Decision = Deny
				out[i].Reason = "corral: not applied: another ref of this push was refused, and a push through the broker is all-or-nothing"
			}
		}
	}
	return out, ok
}

// gitOp names a git route request: "policy", "fetch-refs", "fetch", "push-refs", "push", or ""
// for anything else.
func gitOp(method, p, query string) string {
	switch {
	case method == http.MethodGet && p == PolicyPath && query == "":
		return "policy"
	case strings.HasPrefix(p, "/.corral/") || p == "/" || strings.HasSuffix(p, "/"):
		return ""
	case method == http.MethodGet && strings.HasSuffix(p, "/info/refs") && p != "/info/refs":
		switch query {
		case "service=git-upload-pack":
			return "fetch-refs"
		case "service=git-receive-pack":
			return "push-refs"
		}
	case method == http.MethodPost && query == "" && strings.HasSuffix(p, "/git-upload-pack") && p != "/git-upload-pack":
		return "fetch"
	case method == http.MethodPost && query == "" && strings.HasSuffix(p, "/git-receive-pack") && p != "/git-receive-pack":
		return "push"
	}
	return ""
}

// serveGit serves one request on a git route; it reports whether the client connection may
// carry another request.
func (b *Broker) serveGit(ctx context.Context, dc *deadlineConn, req *http.Request, rt *apiRoute, e Entry, start time.Time) bool {
	e.Route = "git " + rt.name
	p, clean := cleanPath(req.URL)
	e.Path = p
	op := ""
	if clean && e.Port == int(rt.boxPort) {
		op = gitOp(req.Method, p, req.URL.RawQuery)
	}
	if !clean {
		e.Path = req.URL.EscapedPath()
	}
	enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding")))
	switch {
	case op == "":
		b.refuseText(dc, start, withReason(e, "method or path not allowed on git route"), http.StatusMethodNotAllowed,
			"corral: "+req.Method+" "+e.Path+" is not a git smart-HTTP request this route forwards (fetch, clone and push only; see "+PolicyPath+")")
		return false
	case op == "policy":
		e.Decision, e.Status, e.Rule = Allow, http.StatusOK, "git route "+rt.name
		body := rt.git.policyText(rt.name)
		writeText(dc, http.StatusOK, body, req.Close)
		e.BytesDown = int64(len(body))
		b.record(e, start)
		return !req.Close
	case len(req.Header.Values("Content-Encoding")) > 1 || (op == "push" && enc != "" && enc != "identity") ||
		(op == "fetch" && enc != "" && enc != "identity" && enc != "gzip"):
		b.refuseText(dc, start, withReason(e, "compressed request body refused"), http.StatusUnsupportedMediaType,
			"corral: a "+op+" request body with Content-Encoding "+enc+" is refused: the broker reads pushes uncompressed")
		return false
	case op == "push":
		return b.servePush(ctx, dc, req, rt, e, start)
	}
	if op == "fetch-refs" || op == "push-refs" {
		e.Path += "?" + req.URL.RawQuery // which service: a fetch, or the start of a push
	}
	e.Rule = "git route " + rt.name
	out := outgoing(req, rt.upstream, &url.URL{Path: rt.base + p, RawQuery: req.URL.RawQuery})
	return b.forwardRoute(ctx, dc, rt, req, out, e, start)
}

// servePush reads a whole push, decides it, and forwards it only when every ref is allowed.
func (b *Broker) servePush(ctx context.Context, dc *deadlineConn, req *http.Request, rt *apiRoute, e Entry, start time.Time) bool {
	continueIfExpected(dc, req)
	req.Header.Del("Expect")
	spool, err := os.CreateTemp("", "corral-push-*")
	if err != nil {
		b.logf("git route %s: spool: %v", rt.name, err)
		b.refuseText(dc, start, withReason(e, "push spool failed"), http.StatusInternalServerError, "corral: the broker could not hold the push")
		return false
	}
	os.Remove(spool.Name()) // unnamed from here on: nothing is left behind
	defer spool.Close()
	cr := &countReader{r: io.TeeReader(io.LimitReader(req.Body, b.lim.MaxPushBytes+1), spool)}
	push, pack, perr := readPush(bufio.NewReaderSize(cr, 64<<10))
	switch {
	case cr.n > b.lim.MaxPushBytes:
		perr = fmt.Errorf("push larger than %d bytes", b.lim.MaxPushBytes)
	case perr == nil && cr.err != nil:
		perr = fmt.Errorf("push body: %v", cr.err)
	}
	e.BytesUp = cr.n
	if perr != nil {
		b.refuseText(dc, start, withReason(e, "unreadable push: "+perr.Error()), http.StatusBadRequest,
			"corral: push refused, the broker could not read it: "+perr.Error())
		return false
	}
	decisions, ok := rt.git.judge(push.updates, pack)
	e.Refs = decisions
	if !ok {
		e.Decision, e.Status, e.Reason = Deny, http.StatusOK, "push refused"
		if !push.has("report-status") && !push.has("report-status-v2") {
			b.refuseText(dc, start, e, http.StatusForbidden, refusalText(decisions))
			return false
		}
		body := reportStatus(push, decisions, rt)
		e.BytesDown = int64(len(body))
		b.record(e, start)
		writeGitResult(dc, body)
		return false
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		b.refuseText(dc, start, withReason(e, "push spool failed"), http.StatusInternalServerError, "corral: the broker could not hold the push")
		return false
	}
	e.Rule = "git route " + rt.name
	out := outgoing(req, rt.upstream, &url.URL{Path: rt.base + e.Path})
	out.Body, out.ContentLength, out.TransferEncoding = spool, cr.n, nil
	return b.forwardRoute(ctx, dc, rt, req, out, e, start)
}

// readPush reads a receive-pack request: its commands, then its pack when it must have one.
func readPush(r *bufio.Reader) (*pushRequest, packCommits, error) {
	push, err := readPushRequest(r)
	if err != nil {
		return nil, nil, err
	}
	allDeletes := true
	for _, u := range push.updates {
		allDeletes = allDeletes && isZeroOID(u.New)
	}
	if allDeletes { // a probe, or deletes only: git sends no pack
		if _, err := r.ReadByte(); err != io.EOF {
			return nil, nil, errors.New("push: bytes after a request that carries no pack")
		}
		return push, packCommits{}, nil
	}
	pack, err := scanPack(r, push.hashLen)
	if err != nil {
		return nil, nil, err
	}
	return push, pack, nil
}

// countReader counts bytes and keeps the first read error that is not EOF.
type countReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// reportStatus is receive-pack's answer for a refused push: "unpack ok", then "ng REF reason"
// for every ref, inside side band 1 when the client asked for a side band, with each refused
// ref's reason and what the box may push also on band 2, which git prints as "remote: …".
func reportStatus(push *pushRequest, ds []RefDecision, rt *apiRoute) []byte {
	var report []byte
	report = append(report, pktLine("unpack ok\n")...)
	for _, d := range ds {
		report = append(report, pktLine("ng "+d.Ref+" "+d.Reason+"\n")...)
	}
	report = append(report, "0000"...)
	if !push.has("side-band-64k") && !push.has("side-band") {
		return report
	}
	var out []byte
	for _, d := range ds {
		if !strings.Contains(d.Reason, "all-or-nothing") {
			out = append(out, pktLine("\x02"+d.Reason+"\n")...)
		}
	}
	out = append(out, pktLine("\x02corral: this box may push "+rt.git.allowedText()+"; the rules: http://"+rt.boxHost()+PolicyPath+"\n")...)
	chunk := 65515
	if !push.has("side-band-64k") {
		chunk = 995
	}
	for len(report) > 0 {
		n := min(chunk, len(report))
		out = append(out, pktLine("\x01"+string(report[:n]))...)
		report = report[n:]
	}
	return append(out, "0000"...)
}

// refusalText is the text answer for a refused push from a client that asked for no report.
func refusalText(ds []RefDecision) string {
	var sb strings.Builder
	for _, d := range ds {
		sb.WriteString(d.Reason + "\n")
	}
	return sb.String()
}

// writeGitResult writes receive-pack's result for a push the broker refused.
func writeGitResult(dc *deadlineConn, body []byte) {
	dc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(dc, "HTTP/1.1 200 OK\r\nContent-Type: application/x-git-receive-pack-result\r\nCache-Control: no-cache\r\nX-Corral: refused\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	dc.Write(body)
}

// writeText writes a text/plain answer.
func writeText(dc *deadlineConn, status int, body string, close bool) {
	dc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	conn := ""
	if close {
		conn = "Connection: close\r\n"
	}
	fmt.Fprintf(dc, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-cache\r\nContent-Length: %d\r\n%s\r\n%s",
		status, http.StatusText(status), len(body), conn, body)
	dc.SetWriteDeadline(time.Time{})
}

// refuseText logs a refusal and answers it with a readable text body (git prints the body of a
// refused info/refs request as "remote: …" lines) and closes the connection.
func (b *Broker) refuseText(dc *deadlineConn, start time.Time, e Entry, status int, text string) {
	e.Decision, e.Status = Deny, status
	b.record(e, start)
	writeText(dc, status, text+"\n", true)
}
