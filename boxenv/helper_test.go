package boxenv

import (
	"encoding/pem"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gitServer serves bare repositories under root with git http-backend, and requires the
// password want; it records every password it was offered.
type gitServer struct {
	root    string
	want    string
	mu      sync.Mutex
	offered []string
}

func (s *gitServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pass, ok := r.BasicAuth()
	if ok {
		s.mu.Lock()
		s.offered = append(s.offered, pass)
		s.mu.Unlock()
	}
	if !ok || pass != s.want {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(w, "auth", http.StatusUnauthorized)
		return
	}
	gitExec, _ := exec.Command("git", "--exec-path").Output()
	h := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(gitExec)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	h.ServeHTTP(w, r)
}

func (s *gitServer) passwords() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.offered...)
}

// TestCredentialHelperAgainstHTTPSServer runs real git with the guest helper against a real
// https git server on loopback: the token is offered to the configured host over https, and to
// nothing else (another host, or plain http to the same host).
func TestCredentialHelperAgainstHTTPSServer(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "srv")
	if out, err := exec.Command("git", "init", "-q", "--bare", filepath.Join(root, "r.git")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	helper := filepath.Join(dir, "git-credential-corral")
	os.WriteFile(helper, []byte(CredentialHelper), 0o755)

	const token = "tok-0123456789"
	srv := &gitServer{root: root, want: token}
	tlsSrv := httptest.NewTLSServer(srv)
	defer tlsSrv.Close()
	plain := httptest.NewServer(srv)
	defer plain.Close()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o644)

	lsRemote := func(rawURL string, tokenHost string) error {
		cmd := exec.Command("git", "-c", "credential.helper=", "-c", "credential.helper="+helper, "ls-remote", rawURL+"/r.git")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
			"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "GIT_SSL_CAINFO="+ca,
			"CORRAL_GIT_TOKEN_0=decoy-not-for-this-host", "CORRAL_GIT_TOKEN_0_HOST=example.invalid",
			"CORRAL_GIT_TOKEN_1="+token, "CORRAL_GIT_TOKEN_1_HOST="+tokenHost)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("git ls-remote %s: %v\n%s", rawURL, err, out)
		}
		return err
	}
	tlsHost := mustHost(t, tlsSrv.URL)

	if err := lsRemote(tlsSrv.URL, tlsHost); err != nil {
		t.Fatalf("the configured https host was refused the token: %v", err)
	}
	first := srv.passwords()
	if len(first) == 0 {
		t.Fatal("the server was offered no credential")
	}
	for _, p := range first {
		if p != token {
			t.Fatalf("server was offered %q, want only the token", p)
		}
	}
	if err := lsRemote(tlsSrv.URL, "other.example:443"); err == nil {
		t.Error("git authenticated to a host the token is not for")
	}
	if err := lsRemote(plain.URL, mustHost(t, plain.URL)); err == nil {
		t.Error("git authenticated over plain http")
	}
	for _, p := range srv.passwords()[len(first):] {
		t.Errorf("a credential %q was offered where none should be", p)
	}
}

func mustHost(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
