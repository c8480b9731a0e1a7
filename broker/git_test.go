package broker

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/gittest"
)

const gitToken = "ghp_git-token-held-on-the-host"

// gitAuth is the Authorization value the broker adds, and the only one the server accepts.
var gitAuth = gittest.Basic(gitToken)

// gitUpstream is a real smart-HTTP git server on loopback (internal/gittest): git http-backend
// (receive-pack enabled) behind TLS, answering 401 to any request without the host's credential
// and logging every request with whether it carried that credential.
type gitUpstream struct{ *gittest.Server }

func startGitUpstream(t *testing.T) *gitUpstream {
	t.Helper()
	return &gitUpstream{gittest.Start(t, gitAuth, nil)}
}

func (u *gitUpstream) port() uint16 {
	return netip.MustParseAddrPort(strings.TrimPrefix(u.URL, "https://")).Port()
}

// gitBox is a hermetic git environment standing in for the box: its git reaches the upstream
// only through the broker, by the url.insteadOf rewrite the box's git configuration carries.
type gitBox struct {
	dir string
	env []string
}

func newGitBox(t *testing.T, tb *testBroker, host string) *gitBox {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("[user]\n\tname = Box\n\temail = box@example.invalid\n[init]\n\tdefaultBranch = main\n"+
		"[url \"http://%s/\"]\n\tinsteadOf = https://%s/\n", boxAuthority(host), host)
	if err := os.WriteFile(filepath.Join(dir, "gitconfig"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	proxy := "http://corral:" + testSecret + "@" + tb.addr
	return &gitBox{dir: dir, env: []string{
		"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(dir, "gitconfig"),
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "http_proxy=" + proxy, "https_proxy=" + proxy,
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	}}
}

// boxAuthority is the git route's authority for a git host (HOST:PORT → HOST.git.corral:PORT).
func boxAuthority(host string) string {
	h, port, _ := strings.Cut(host, ":")
	if port == "" || port == "443" {
		return h + GitSuffix
	}
	return h + GitSuffix + ":" + port
}

// git runs git in dir (relative to the box's directory) and returns its combined output.
func (g *gitBox) git(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = filepath.Join(g.dir, dir), g.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (g *gitBox) mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := g.git(t, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// serverRef reads a ref of the upstream's repository directly ("" when absent).
func (u *gitUpstream) ref(t *testing.T, ref string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", filepath.Join(u.Root, gittest.Repo), "rev-parse", "--verify", "-q", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// gitFixture is a broker with one git route to a real git server holding o/r.git (main with
// one commit), and a box that cloned it through the broker.
type gitFixture struct {
	up   *gitUpstream
	tb   *testBroker
	box  *gitBox
	host string
	url  string
}

func newGitFixture(t *testing.T, rules GitRules) *gitFixture {
	t.Helper()
	up := startGitUpstream(t)
	up.Seed(t)
	host := fmt.Sprintf("example.com:%d", up.port())
	roots := up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tb := startBroker(t, []string{fmt.Sprintf("127.0.0.1:%d", up.port())},
		fakeResolver{"example.com": {netip.MustParseAddr("127.0.0.1")}}, nil, func(c *Config) {
			c.APIRoutes = []APIRoute{{Name: host, Upstream: "https://" + host, Header: "Authorization", Value: gitAuth,
				RootCAs: roots, Git: &rules}}
		})
	f := &gitFixture{up: up, tb: tb, box: newGitBox(t, tb, host), host: host, url: "https://" + host + "/o/r.git"}
	f.box.mustGit(t, "", "clone", "-q", f.url, "w")
	return f
}

// commit makes an empty commit in the box's clone and returns its name.
func (f *gitFixture) commit(t *testing.T, msg string) string {
	t.Helper()
	f.box.mustGit(t, "w", "commit", "-q", "--allow-empty", "-m", msg)
	return f.box.mustGit(t, "w", "rev-parse", "HEAD")
}

// refused runs a push that the broker must refuse: git fails, its stderr shows want, the
// server saw no POST git-receive-pack for it (so never an authenticated attempt to update),
// and the upstream's refs are as before.
func (f *gitFixture) refused(t *testing.T, want string, refs []string, args ...string) {
	t.Helper()
	before := map[string]string{}
	for _, r := range refs {
		before[r] = f.up.ref(t, r)
	}
	posts := len(f.up.Requests("POST /o/r.git/git-receive-pack"))
	out, err := f.box.git(t, "w", args...)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("git %s: err %v, output:\n%s\nwant a failure showing %q", strings.Join(args, " "), err, out, want)
	}
	if n := len(f.up.Requests("POST /o/r.git/git-receive-pack")); n != posts {
		t.Errorf("git %s: the server received %d receive-pack POSTs, want none", strings.Join(args, " "), n-posts)
	}
	for _, r := range refs {
		if got := f.up.ref(t, r); got != before[r] {
			t.Errorf("git %s: upstream %s moved from %q to %q", strings.Join(args, " "), r, before[r], got)
		}
	}
}

// TestGitRouteFetchAndPush: through a git route, a real git clones and fetches from a real git
// server with the host's credential (the box has none); a push to a ref git_push allows
// arrives with the credential, and a fast-forward of it too. A push to main, a delete, a force
// push and a --mirror push are each refused with the reason on git's stderr, and never reach
// the server, whose refs stay as they were. Every decision is in the egress log with its refs,
// and the token never is. Controls: the same server refuses a request without the credential,
// and TestGitRouteFlagsAllow shows the same pushes pass when the rules allow them.
func TestGitRouteFetchAndPush(t *testing.T) {
	f := newGitFixture(t, GitRules{Push: []string{"refs/heads/corral/*"}})
	main := f.up.ref(t, "refs/heads/main")
	if got := f.box.mustGit(t, "w", "rev-parse", "origin/main"); got != main || main == "" {
		t.Fatalf("clone through the broker: origin/main %q, upstream main %q", got, main)
	}
	if n := len(f.up.Requests("auth=token")); n == 0 || len(f.up.Requests("auth=none")) != 0 || len(f.up.Requests("auth=other")) != 0 {
		t.Errorf("server log: every request must carry the host's credential and only that:\n%s", strings.Join(f.up.Requests(""), "\n"))
	}
	resp, err := f.up.Client().Get(f.up.URL + "/o/r.git/info/refs?service=git-upload-pack")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("control: the server without the credential answered %v %v, want 401", resp, err)
	}
	resp.Body.Close()

	// An allowed push, then a fast-forward of it.
	c1 := f.commit(t, "one")
	f.box.mustGit(t, "w", "push", "-q", "origin", "HEAD:refs/heads/corral/work")
	c2 := f.commit(t, "two")
	f.box.mustGit(t, "w", "push", "-q", "origin", "HEAD:refs/heads/corral/work")
	if got := f.up.ref(t, "refs/heads/corral/work"); got != c2 || c1 == c2 {
		t.Fatalf("allowed pushes: upstream corral/work %q, want %q", got, c2)
	}
	posts := f.up.Requests("POST /o/r.git/git-receive-pack")
	if len(posts) != 2 || len(f.up.Requests("auth=none")) != 1 || len(f.up.Requests("auth=other")) != 0 { // the one: the control
		t.Errorf("allowed pushes reached the server as %v; want two receive-pack POSTs, each with the credential; server log:\n%s", posts, strings.Join(f.up.Requests(""), "\n"))
	}
	f.box.mustGit(t, "w", "fetch", "-q", "origin")

	refs := []string{"refs/heads/main", "refs/heads/corral/work"}
	f.refused(t, "refs/heads/main is not a ref this box may push; it may push refs matching refs/heads/corral/* (git_push)", refs,
		"push", "origin", "HEAD:main")
	f.refused(t, "deleting refs/heads/corral/work is refused (git_push_delete is off)", refs,
		"push", "origin", ":refs/heads/corral/work")
	f.box.mustGit(t, "w", "reset", "-q", "--hard", main)
	f.commit(t, "rewritten")
	f.refused(t, "refs/heads/corral/work is not a fast-forward the broker can prove (git_push_force is off)", refs,
		"push", "--force", "origin", "HEAD:refs/heads/corral/work")
	f.box.mustGit(t, "w", "branch", "corral/extra")
	f.refused(t, "another ref of this push was refused", append(refs, "refs/heads/corral/extra"),
		"push", "--mirror", "origin")
	if got := f.up.ref(t, "refs/heads/corral/extra"); got != "" {
		t.Errorf("a refused --mirror push created corral/extra upstream (%s): pushes must be all-or-nothing", got)
	}
	out, _ := f.box.git(t, "w", "push", "origin", "HEAD:main")
	if !strings.Contains(out, "remote: corral: this box may push refs matching refs/heads/corral/*") || !strings.Contains(out, PolicyPath) {
		t.Errorf("a refused push does not tell the agent what it may push:\n%s", out)
	}

	var sawMain, sawDelete bool
	for _, e := range f.tb.entries(t) {
		for _, r := range e.Refs {
			sawMain = sawMain || (r.Ref == "refs/heads/main" && r.Decision == Deny && e.Decision == Deny && strings.Contains(r.Reason, "git_push"))
			sawDelete = sawDelete || (r.Ref == "refs/heads/corral/work" && isZeroOID(r.New) && r.Decision == Deny)
		}
	}
	if !sawMain || !sawDelete {
		t.Errorf("egress log lacks the refused refs (main %v, delete %v)", sawMain, sawDelete)
	}
	var advertised bool
	for _, e := range f.tb.entries(t) {
		advertised = advertised || (e.Path == "/o/r.git/info/refs?service=git-receive-pack" && e.Decision == Allow)
	}
	if !advertised {
		t.Error("egress log does not tell a push's start (info/refs?service=git-receive-pack) from a fetch")
	}
	data, _ := os.ReadFile(f.tb.logPath)
	if strings.Contains(string(data), gitToken) || strings.Contains(string(data), strings.TrimPrefix(gitAuth, "Basic ")) {
		t.Error("the egress log holds the token")
	}
}

// TestGitRouteFlagsAllow: the controls of TestGitRouteFetchAndPush. With git_push covering
// every ref, git_push_delete and git_push_force, the same push to main, delete, force push and
// --mirror push succeed through the same broker and server.
func TestGitRouteFlagsAllow(t *testing.T) {
	f := newGitFixture(t, GitRules{Push: []string{"refs/*"}, Delete: true, Force: true})
	main := f.up.ref(t, "refs/heads/main")
	c1 := f.commit(t, "one")
	f.box.mustGit(t, "w", "push", "-q", "origin", "HEAD:main", "HEAD:refs/heads/corral/work")
	f.box.mustGit(t, "w", "push", "-q", "origin", ":refs/heads/corral/work")
	f.box.mustGit(t, "w", "reset", "-q", "--hard", main)
	c2 := f.commit(t, "rewritten")
	f.box.mustGit(t, "w", "push", "-q", "--force", "origin", "HEAD:main")
	f.box.mustGit(t, "w", "branch", "corral/extra")
	f.box.mustGit(t, "w", "push", "-q", "--mirror", "origin")
	if got := f.up.ref(t, "refs/heads/main"); got != c2 || c1 == c2 || f.up.ref(t, "refs/heads/corral/work") != "" || f.up.ref(t, "refs/heads/corral/extra") != c2 {
		t.Errorf("upstream after the allowed pushes: main %q (want %q), corral/work %q (want deleted), corral/extra %q",
			got, c2, f.up.ref(t, "refs/heads/corral/work"), f.up.ref(t, "refs/heads/corral/extra"))
	}
}

// TestGitRouteNarrowed: the repository's narrowing applies on top of the trusted patterns: a
// ref both allow is pushed, one only the trusted patterns allow is refused, naming both.
func TestGitRouteNarrowed(t *testing.T) {
	f := newGitFixture(t, GitRules{Push: []string{"refs/heads/corral/*"}, Narrowed: true, Narrow: []string{"refs/heads/corral/agent-*"}})
	f.commit(t, "one")
	f.box.mustGit(t, "w", "push", "-q", "origin", "HEAD:refs/heads/corral/agent-1")
	f.refused(t, "(the repository's git_push)", []string{"refs/heads/corral/other"}, "push", "origin", "HEAD:refs/heads/corral/other")
}

// TestGitRouteLargePush: a push larger than git's post buffer (sent chunked, after git's probe
// request) passes the broker whole.
func TestGitRouteLargePush(t *testing.T) {
	f := newGitFixture(t, GitRules{Push: []string{"refs/heads/corral/*"}})
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i*7919 + i>>9) // poorly compressible
	}
	if err := os.WriteFile(filepath.Join(f.box.dir, "w", "big.bin"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	f.box.mustGit(t, "w", "add", "big.bin")
	c := f.commit(t, "big")
	f.box.mustGit(t, "w", "push", "-q", "origin", "HEAD:refs/heads/corral/big")
	if got := f.up.ref(t, "refs/heads/corral/big"); got != c {
		t.Errorf("large push: upstream corral/big %q, want %q", got, c)
	}
}

// TestGitRoutePolicyAndRefusals: the box can read the push rules before it tries; a compressed
// push body, a path outside git's smart HTTP and a forged "create" of an existing ref are
// refused, the first two by the broker before the server sees them, the last by the server's
// old-object precondition, which the fast-forward guarantee relies on.
func TestGitRoutePolicyAndRefusals(t *testing.T) {
	f := newGitFixture(t, GitRules{Push: []string{"refs/heads/corral/*"}})
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("corral", testSecret), Host: f.tb.addr}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), DisableKeepAlives: true}, Timeout: 10 * time.Second}
	base := "http://" + boxAuthority(f.host)
	do := func(method, path string, hdr map[string]string, body []byte) (int, string) {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("GET", PolicyPath, nil, nil); code != 200 || !strings.Contains(body, "push: refs matching refs/heads/corral/* (git_push)") ||
		!strings.Contains(body, "delete a ref: refused") {
		t.Errorf("policy page: %d %q", code, body)
	}

	f.commit(t, "one")
	f.box.mustGit(t, "w", "push", "-q", "origin", "HEAD:refs/heads/corral/work")
	work := f.up.ref(t, "refs/heads/corral/work")
	f.box.mustGit(t, "w", "reset", "-q", "--hard", "origin/main")
	other := f.commit(t, "unrelated")
	pack := packOf(t, f.box, other, "origin/main")
	zero := strings.Repeat("0", 40)
	forged := append(append(pktLine(zero+" "+other+" refs/heads/corral/work\x00report-status side-band-64k\n"), "0000"...), pack...)

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(forged)
	zw.Close()
	posts := len(f.up.Requests("POST"))
	hdr := map[string]string{"Content-Type": "application/x-git-receive-pack-request", "Content-Encoding": "gzip"}
	if code, body := do("POST", "/o/r.git/git-receive-pack", hdr, gz.Bytes()); code != http.StatusUnsupportedMediaType || !strings.Contains(body, "uncompressed") {
		t.Errorf("gzip push body: %d %q, want 415", code, body)
	}
	if code, _ := do("GET", "/o/r.git/HEAD", nil, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("dumb-HTTP path: %d, want 405", code)
	}
	if n := len(f.up.Requests("POST")); n != posts || len(f.up.Requests("/HEAD")) != 0 {
		t.Errorf("refused requests reached the server:\n%s", strings.Join(f.up.Requests(""), "\n"))
	}

	// Control for the gzip case and the forged create: the same body uncompressed passes the
	// broker (old = zero is a create, which needs no fast-forward), and the server refuses it
	// because the ref exists.
	delete(hdr, "Content-Encoding")
	code, body := do("POST", "/o/r.git/git-receive-pack", hdr, forged)
	if code != 200 || len(f.up.Requests("POST")) != posts+1 || strings.Contains(body, "ok refs/heads/corral/work") {
		t.Errorf("forged create: %d %q", code, body)
	}
	if got := f.up.ref(t, "refs/heads/corral/work"); got != work {
		t.Errorf("a forged create moved an existing ref from %s to %s: the server's old-object precondition failed", work, got)
	}
}

// packOf builds, with real git, the pack a push of tip would send to a server that has base.
func packOf(t *testing.T, g *gitBox, tip, base string) []byte {
	t.Helper()
	cmd := exec.Command("git", "pack-objects", "--revs", "--stdout", "-q")
	cmd.Dir, cmd.Env = filepath.Join(g.dir, "w"), g.env
	cmd.Stdin = strings.NewReader(tip + "\n^" + base + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git pack-objects: %v", err)
	}
	return out
}
