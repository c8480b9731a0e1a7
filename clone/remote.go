package clone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// wanted is what a transfer found to fetch: the refs taken and where HEAD points.
type wanted struct {
	refs map[plumbing.ReferenceName]plumbing.Hash
	// head is the branch HEAD names ("" when unknown or detached).
	head plumbing.ReferenceName
	// headHash is HEAD's commit when detached or unknown.
	headHash plumbing.Hash
}

// selectRefs keeps refs/heads/* and refs/tags/*, refusing any hostile name among them.
func selectRefs(all map[string]plumbing.Hash, fs *findings) map[plumbing.ReferenceName]plumbing.Hash {
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	for name, h := range all {
		if !wantedRef(name) {
			continue
		}
		if why := RefNameProblem(name); why != "" {
			fs.refuse(Finding{Class: ClassRef, Path: name, Reason: why})
			continue
		}
		out[plumbing.ReferenceName(name)] = h
	}
	return out
}

// transferRemote fetches every branch and tag of an https or ssh source into s, through f.
//
// go-git v5 fails an ssh fetch now and then with "closing input: EOF": the server has sent
// everything and closed the channel before the client closes its side after "done"
// (go-git/go-git#1685, fixed in v6 by ignoring that EOF, #1815). Nothing has been received
// then, so the whole transfer is tried once more, on a new session.
func transferRemote(ctx context.Context, src Source, s storer.Storer, f *os.File, l Limits, opts Options, fs *findings) (*wanted, error) {
	w, err := transferAttempt(ctx, src, s, f, l, opts, fs)
	if err != nil && strings.Contains(err.Error(), "closing input: EOF") {
		w, err = transferAttempt(ctx, src, s, f, l, opts, fs)
	}
	return w, err
}

// transferAttempt is transferOnce; tests replace it to see what transferRemote retries.
var transferAttempt = transferOnce

// transferOnce is one attempt of transferRemote.
func transferOnce(ctx context.Context, src Source, s storer.Storer, f *os.File, l Limits, opts Options, fs *findings) (*wanted, error) {
	ep, err := transport.NewEndpoint(src.URL)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", src.URL, err)
	}
	streamed := newRefTally(l)
	cl, auth, err := client(src, ep, l, opts, streamed)
	if err != nil {
		return nil, err
	}
	sess, err := cl.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, fmt.Errorf("connect to %q: %w", src.URL, err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if streamed.err != nil {
		return nil, streamed.err
	}
	if err != nil {
		return nil, fmt.Errorf("list refs of %q: %w", src.URL, err)
	}
	if err := countAdvertised(ar.References, newRefTally(l)); err != nil {
		return nil, err
	}
	w := &wanted{refs: selectRefs(ar.References, fs)}
	if err := fs.err(); err != nil {
		return nil, err
	}
	if len(w.refs) == 0 {
		return nil, fmt.Errorf("fetch %q: no branches or tags to fetch", src.URL)
	}
	w.head, w.headHash = advertisedHead(ar)
	req := uploadRequest(ar.Capabilities, w.refs)
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("fetch %q: %w", src.URL, err)
	}
	defer resp.Close()
	return w, receiveScanStore(ctx, demux(req.Capabilities, resp), s, f, l)
}

// receiveScanStore runs the pack pipeline: capped receive into f, scan, then go-git stores it.
func receiveScanStore(ctx context.Context, r io.Reader, s storer.Storer, f *os.File, l Limits) error {
	if _, _, err := receivePack(ctx, r, f, l); err != nil {
		return err
	}
	if err := scanPack(ctx, f, l); err != nil {
		return err
	}
	return storePack(s, f)
}

// uploadRequest asks for every wanted hash, full (not thin) packs with offset deltas, and no
// progress chatter.
func uploadRequest(adv *capability.List, refs map[plumbing.ReferenceName]plumbing.Hash) *packp.UploadPackRequest {
	req := packp.NewUploadPackRequestFromCapabilities(adv)
	req.Capabilities.Delete(capability.ThinPack)
	if adv.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	seen := map[plumbing.Hash]bool{}
	for _, h := range refs {
		if !seen[h] {
			seen[h] = true
			req.Wants = append(req.Wants, h)
		}
	}
	sort.Slice(req.Wants, func(i, j int) bool { return req.Wants[i].String() < req.Wants[j].String() })
	return req
}

// advertisedHead returns the branch the remote's HEAD names, or its hash when it names none.
func advertisedHead(ar *packp.AdvRefs) (plumbing.ReferenceName, plumbing.Hash) {
	for _, v := range ar.Capabilities.Get(capability.SymRef) {
		if from, to, ok := strings.Cut(v, ":"); ok && from == "HEAD" && RefNameProblem(to) == "" {
			return plumbing.ReferenceName(to), plumbing.ZeroHash
		}
	}
	if ar.Head != nil {
		return "", *ar.Head
	}
	return "", plumbing.ZeroHash
}

func demux(caps *capability.List, r io.Reader) io.Reader {
	switch {
	case caps.Supports(capability.Sideband64k):
		return sideband.NewDemuxer(sideband.Sideband64k, r)
	case caps.Supports(capability.Sideband):
		return sideband.NewDemuxer(sideband.Sideband, r)
	}
	return r
}

// client returns the transport for src: go-git's own HTTP client around a capped http.Client
// that counts the advertised refs into refs as they arrive, or its SSH client (host keys from
// known_hosts, keys from the SSH agent).
func client(src Source, ep *transport.Endpoint, l Limits, opts Options, refs *refTally) (transport.Transport, transport.AuthMethod, error) {
	switch src.Kind {
	case KindHTTPS:
		hc := cappedHTTPClient(opts.HTTPClient, l.MaxPackBytes+(64<<20), refs)
		return githttp.NewClientWithOptions(hc, &githttp.ClientOptions{RedirectPolicy: githttp.FollowInitialRedirects}), opts.Auth, nil
	case KindSSH:
		auth := opts.Auth
		if auth == nil {
			a, err := gitssh.DefaultAuthBuilder(ep.User)
			if err != nil {
				return nil, nil, fmt.Errorf("ssh auth for %q: %w", src.URL, err)
			}
			auth = a
		}
		return gitssh.DefaultClient, auth, nil
	}
	return nil, nil, fmt.Errorf("%w: %q is not a network source", ErrSource, src.URL)
}

// cappedHTTPClient copies base (or a default client), caps every response body at max bytes,
// counts the refs of every ref advertisement into refs, and refuses redirects away from https.
func cappedHTTPClient(base *http.Client, max int64, refs *refTally) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = capTransport{rt: rt, max: max, refs: refs}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			return fmt.Errorf("redirect to %q refused: only https", req.URL.Redacted())
		}
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return nil
	}
	return c
}

type capTransport struct {
	rt   http.RoundTripper
	max  int64
	refs *refTally
}

func (t capTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	var r io.Reader = &capReader{ctx: req.Context(), r: resp.Body, max: t.max}
	if t.refs != nil && strings.HasSuffix(req.URL.Path, "/info/refs") {
		r = &advCounter{r: r, t: t.refs}
	}
	resp.Body = capBody{ReadCloser: resp.Body, r: r}
	return resp, nil
}

type capBody struct {
	io.ReadCloser
	r io.Reader
}

func (b capBody) Read(p []byte) (int, error) { return b.r.Read(p) }
