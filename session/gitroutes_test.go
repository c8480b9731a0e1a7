package session

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/internal/gittest"
	"github.com/git-corral/git-corral/policy"
)

const gitTokenValue = "ghp_session-git-token-5e1f0c"

// localhostTLS returns a certificate for "localhost" and a PEM file trusting it, for the broker
// child (a separate process, which takes its roots from SSL_CERT_FILE).
func localhostTLS(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	cert, pemBytes := gittest.LocalhostCert(t)
	file := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(file, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, file
}

// gitServer is git http-backend over TLS for localhost (internal/gittest), accepting only the
// token as git's basic credential and logging each request with whether it carried it.
type gitServer struct{ *gittest.Server }

func startGitServer(t *testing.T, cert tls.Certificate) *gitServer {
	t.Helper()
	s := &gitServer{gittest.Start(t, gittest.Basic(gitTokenValue), &cert)}
	s.Seed(t)
	return s
}

func (s *gitServer) entries(substr string) int { return len(s.Requests(substr)) }

func (s *gitServer) ref(name string) string {
	out, _ := exec.Command("git", "--git-dir", filepath.Join(s.Root, gittest.Repo), "rev-parse", "--verify", "-q", name).Output()
	return strings.TrimSpace(string(out))
}

// TestGitTokensThroughBroker: in broker mode, git_tokens and git_push make the real broker
// child (started by ensureBroker) a git route: the session's environment holds no token (no
// CORRAL_GIT_TOKEN_<n>, the variable named as held on the host) and no credential helper is
// rendered, yet a real git with only the session's git configuration and proxy clones over it
// with the token the broker added; a push to a git_push ref arrives, a push to main and a
// delete are refused with their reasons on git's stderr and never reach the server. Changing
// git_push_delete and git_push_force restarts the broker with the new rules, and the same
// delete and a force push then pass. Controls: full mode passes the token to the box and
// renders the helper, as before; the server refuses a request without the token.
func TestGitTokensThroughBroker(t *testing.T) {
	useBuiltBroker(t)
	cert, roots := localhostTLS(t)
	t.Setenv("SSL_CERT_FILE", roots)
	srv := startGitServer(t, cert)
	port := strings.TrimPrefix(srv.URL, "https://127.0.0.1:")
	host := "localhost:" + port
	t.Setenv("CORRAL_TEST_GIT_TOKEN", gitTokenValue)

	cfg := policy.Default()
	cfg.Network = policy.NetworkFull // the control: full mode, as before broker was the default
	cfg.GitTokens = map[string]string{host: "CORRAL_TEST_GIT_TOKEN"}
	cfg.GitPush = policy.RefPatterns{Trusted: []string{"refs/heads/corral/*"}}
	full, err := AssembleEnv(cfg, nil)
	if err != nil || full.Values["CORRAL_GIT_TOKEN_0"] != gitTokenValue || !gitCredentialHelper(cfg) {
		t.Fatalf("control, full mode: the token reaches the box's credential helper as before: %v %v", full.Values, err)
	}
	cfg.Network, cfg.Egress = policy.NetworkBroker, []string{"127.0.0.1:" + port, "[::1]:" + port}
	env, err := AssembleEnv(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range env.Values {
		if strings.Contains(v, gitTokenValue) || strings.HasPrefix(k, "CORRAL_GIT_TOKEN") {
			t.Errorf("broker mode: %s=%q is in the session environment", k, v)
		}
	}
	if !strings.Contains(strings.Join(env.Dropped, "\n"), "git token for "+host+" (held on the host by the broker's git route for "+host+")") || gitCredentialHelper(cfg) {
		t.Errorf("broker mode: dropped %q, credential helper %v", env.Dropped, gitCredentialHelper(cfg))
	}

	box := "git-abc123"
	h, m := brokerBox(t, box)
	bport, err := broker.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secret, err := ensureBroker(ctx, m, box, cfg, bport, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { meta, _ := m.ReadMeta(box); broker.StopChild(meta.BrokerPID, box) }()

	// The box's git: the session's git configuration and a proxy pointing at the broker.
	dir := t.TempDir()
	boxEnv := map[string]string{}
	gitRouteEnv(cfg, boxEnv)
	proxy := fmt.Sprintf("http://corral:%s@127.0.0.1:%d", secret, bport)
	genv := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "http_proxy=" + proxy, "GIT_AUTHOR_NAME=B", "GIT_AUTHOR_EMAIL=b@example.invalid",
		"GIT_COMMITTER_NAME=B", "GIT_COMMITTER_EMAIL=b@example.invalid"}
	for k, v := range boxEnv {
		genv = append(genv, k+"="+v)
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, genv
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustGit := func(args ...string) {
		t.Helper()
		if out, err := git(args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	mustGit("clone", "-q", "https://"+host+"/o/r.git", "w")
	mustGit("-C", "w", "commit", "-q", "--allow-empty", "-m", "work")
	mustGit("-C", "w", "push", "-q", "origin", "HEAD:refs/heads/corral/work")
	if srv.ref("refs/heads/corral/work") == "" || len(srv.Requests("auth=none"))+len(srv.Requests("auth=other")) != 0 {
		t.Fatalf("allowed push: corral/work %q; server log %v", srv.ref("refs/heads/corral/work"), srv.Log())
	}
	posts := srv.entries("POST /o/r.git/git-receive-pack")
	main := srv.ref("refs/heads/main")
	refusals := []struct {
		args []string
		want string
	}{
		{[]string{"push", "origin", "HEAD:main"}, "refs/heads/main is not a ref this box may push"},
		{[]string{"push", "origin", ":refs/heads/corral/work"}, "git_push_delete is off"},
	}
	for _, r := range refusals {
		out, err := git(append([]string{"-C", "w"}, r.args...)...)
		if err == nil || !strings.Contains(out, r.want) {
			t.Errorf("git %v: %v\n%s\nwant a refusal showing %q", r.args, err, out, r.want)
		}
	}
	if srv.entries("POST /o/r.git/git-receive-pack") != posts || srv.ref("refs/heads/main") != main || srv.ref("refs/heads/corral/work") == "" {
		t.Errorf("refused pushes reached the server or changed its refs: %v", srv.Log())
	}

	cfg.GitPushDelete, cfg.GitPushForce = true, true
	if _, err := ensureBroker(ctx, m, box, cfg, bport, func(string) {}); err != nil {
		t.Fatal(err)
	}
	mustGit("-C", "w", "push", "-q", "origin", ":refs/heads/corral/work")
	mustGit("-C", "w", "reset", "-q", "--hard", main)
	mustGit("-C", "w", "commit", "-q", "--allow-empty", "-m", "other")
	mustGit("-C", "w", "push", "-q", "origin", "HEAD:refs/heads/corral/b")
	mustGit("-C", "w", "reset", "-q", "--hard", main)
	mustGit("-C", "w", "commit", "-q", "--allow-empty", "-m", "rewritten")
	mustGit("-C", "w", "push", "-q", "--force", "origin", "HEAD:refs/heads/corral/b")
	if srv.ref("refs/heads/corral/work") != "" {
		t.Error("git_push_delete = true: the delete did not reach the server")
	}

	pool := x509.NewCertPool()
	pool.AddCert(must509(t, cert.Certificate[0]))
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	resp, err := direct.Get(srv.URL + "/o/r.git/info/refs?service=git-upload-pack")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("control: the server answered %v %v without the token, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	data, _ := os.ReadFile(h.EgressLog(box))
	if !strings.Contains(string(data), `"ref":"refs/heads/main"`) || strings.Contains(string(data), gitTokenValue) {
		t.Errorf("egress log lacks the refused ref or holds the token:\n%s", data)
	}
	meta, _ := m.ReadMeta(box)
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", meta.BrokerPID)); strings.Contains(string(b), gitTokenValue) {
		t.Error("the token is on the broker child's argv")
	}
}

func must509(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGitRouteEnv: the session's git configuration sends each git_tokens host to its route,
// numbered after configuration the environment already holds, and only in broker mode.
func TestGitRouteEnv(t *testing.T) {
	cfg := policy.Default()
	cfg.Network = policy.NetworkFull
	cfg.GitTokens = map[string]string{"github.com": "T", "git.example.com:8443": "U"}
	env := map[string]string{}
	gitRouteEnv(cfg, env)
	if len(env) != 0 {
		t.Errorf("full mode: %v", env)
	}
	cfg.Network = policy.NetworkBroker
	env = map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.pager", "GIT_CONFIG_VALUE_0": "cat"}
	gitRouteEnv(cfg, env)
	want := map[string]string{"GIT_CONFIG_COUNT": "3", "GIT_CONFIG_KEY_0": "core.pager", "GIT_CONFIG_VALUE_0": "cat",
		"GIT_CONFIG_KEY_1": "url.http://git.example.com.git.corral:8443/.insteadOf", "GIT_CONFIG_VALUE_1": "https://git.example.com:8443/",
		"GIT_CONFIG_KEY_2": "url.http://github.com.git.corral/.insteadOf", "GIT_CONFIG_VALUE_2": "https://github.com/"}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("env %v\nwant %v", env, want)
	}
}
