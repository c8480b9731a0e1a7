package boxenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
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
	"time"
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

// Names the test's certificate covers; git reaches them through http.curloptResolve, so no
// resolver is asked and every connection goes to 127.0.0.1.
const (
	goodName = "git.corral.test"
	evilName = "evil.corral.test"
	subName  = goodName + "." + evilName
)

// testCert makes a self-signed certificate for goodName, evilName and 127.0.0.1 and writes it
// (the CA git trusts) to caFile.
func testCert(t *testing.T, caFile string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: goodName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{goodName, evilName, subName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func tlsServer(t *testing.T, h http.Handler, cert tls.Certificate) *httptest.Server {
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func port(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestCredentialHelperAgainstHTTPSServer runs real git with the guest helper against real git
// servers on loopback that require the token as Basic auth. The token is configured for
// git.corral.test:<good port> over https; git fetches and pushes there with it, and every hostile
// URL in the table gets nothing: no server, including the good one, is ever offered the token
// for it, and the helper itself prints nothing.
func TestCredentialHelperAgainstHTTPSServer(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "srv")
	for _, args := range [][]string{{"init", "-q", "--bare", filepath.Join(root, "r.git")},
		{"-C", filepath.Join(root, "r.git"), "config", "http.receivepack", "true"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	helper := filepath.Join(dir, "git-credential-corral")
	if err := os.WriteFile(helper, []byte(CredentialHelper), 0o755); err != nil {
		t.Fatal(err)
	}
	const token = "tok-0123456789"
	ca := filepath.Join(dir, "ca.pem")
	cert := testCert(t, ca)
	good := &gitServer{root: root, want: token}
	other := &gitServer{root: root, want: token}
	goodSrv := tlsServer(t, good, cert)
	otherSrv := tlsServer(t, other, cert) // same name, another port
	plain := httptest.NewServer(good)
	t.Cleanup(plain.Close)
	gp, op := port(t, goodSrv.URL), port(t, otherSrv.URL)
	redirect := tlsServer(t, http.RedirectHandler("https://"+evilName+":"+gp+"/r.git/info/refs?service=git-upload-pack", http.StatusFound), cert)
	rp := port(t, redirect.URL)
	tokenHost := goodName + ":" + gp

	git := func(t *testing.T, args ...string) (string, error) {
		base := []string{"-c", "credential.helper=", "-c", "credential.helper=" + helper, "-c", "http.followRedirects=true",
			"-c", "user.name=t", "-c", "user.email=t@example.invalid"}
		for _, p := range []string{gp, op, rp, port(t, plain.URL)} {
			for _, n := range []string{goodName, evilName, subName} {
				base = append(base, "-c", "http.curloptResolve="+n+":"+p+":127.0.0.1")
			}
		}
		cmd := exec.Command("git", append(base, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
			"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "GIT_SSL_CAINFO="+ca,
			"CORRAL_GIT_TOKEN_0=decoy-not-for-this-host", "CORRAL_GIT_TOKEN_0_HOST=example.invalid",
			"CORRAL_GIT_TOKEN_1="+token, "CORRAL_GIT_TOKEN_1_HOST="+tokenHost)
		out, err := cmd.CombinedOutput()
		t.Logf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		return string(out), err
	}

	t.Run("the configured host over https: fetch and push with the token", func(t *testing.T) {
		work := filepath.Join(dir, "work")
		if _, err := git(t, "clone", "-q", "https://"+tokenHost+"/r.git", work); err != nil {
			t.Fatalf("clone from the configured host failed: %v", err)
		}
		os.WriteFile(filepath.Join(work, "f"), []byte("x\n"), 0o644)
		if _, err := git(t, "-C", work, "add", "f"); err != nil {
			t.Fatal(err)
		}
		if _, err := git(t, "-C", work, "commit", "-q", "-m", "c"); err != nil {
			t.Fatal(err)
		}
		if _, err := git(t, "-C", work, "push", "-q", "origin", "HEAD:refs/heads/main"); err != nil {
			t.Fatalf("push to the configured host failed: %v", err)
		}
		out, err := git(t, "ls-remote", "https://"+tokenHost+"/r.git")
		if err != nil || !strings.Contains(out, "refs/heads/main") {
			t.Fatalf("the pushed branch is not on the server: %v %s", err, out)
		}
		for _, p := range good.passwords() {
			if p != token {
				t.Errorf("the server was offered %q, want only the token", p)
			}
		}
	})

	hostile := []struct{ name, url string }{
		{"same host over plain http", "http://" + goodName + ":" + port(t, plain.URL) + "/r.git"},
		{"another host on the same server", "https://" + evilName + ":" + gp + "/r.git"},
		{"the same host on another port", "https://" + goodName + ":" + op + "/r.git"},
		{"the address instead of the name", "https://127.0.0.1:" + gp + "/r.git"},
		{"userinfo naming another user", "https://evil@" + tokenHost + "/r.git"},
		{"the configured host as userinfo of another", "https://" + goodName + "@" + evilName + ":" + gp + "/r.git"},
		{"the configured host in the path", "https://" + evilName + ":" + gp + "/" + tokenHost + "/r.git"},
		{"the configured host as a subdomain", "https://" + subName + ":" + gp + "/r.git"},
		{"a redirect from another server to another host", "https://" + goodName + ":" + rp + "/r.git"},
	}
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			before := len(good.passwords()) + len(other.passwords())
			out, err := git(t, "ls-remote", h.url)
			if err == nil {
				t.Errorf("git authenticated to %s", h.url)
			}
			// The server asked for credentials and git had none to give: the helper was asked.
			if !strings.Contains(out, "terminal prompts disabled") {
				t.Errorf("git failed before asking for credentials; the row proves nothing: %s", out)
			}
			for _, p := range append(good.passwords(), other.passwords()...)[before:] {
				if p == token {
					t.Errorf("the token was offered for %s", h.url)
				}
			}
		})
	}
}

// TestCredentialHelperProtocol feeds the helper the credential protocol directly: it answers
// get for the configured https host only and prints nothing for any other input.
func TestCredentialHelperProtocol(t *testing.T) {
	helper := filepath.Join(t.TempDir(), "git-credential-corral")
	if err := os.WriteFile(helper, []byte(CredentialHelper), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "CORRAL_GIT_TOKEN_0=tok", "CORRAL_GIT_TOKEN_0_HOST=git.example:8443"}
	run := func(action, in string, env []string) string {
		cmd := exec.Command(helper, action)
		cmd.Env, cmd.Stdin = env, strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("helper %s exited with %v", action, err)
		}
		return string(out)
	}
	if got := run("get", "protocol=https\nhost=git.example:8443\n\n", env); got != "username=x-access-token\npassword=tok\n" {
		t.Fatalf("get for the configured host printed %q", got)
	}
	cases := []struct{ name, action, in string }{
		{"store", "store", "protocol=https\nhost=git.example:8443\nusername=x\npassword=y\n\n"},
		{"erase", "erase", "protocol=https\nhost=git.example:8443\n\n"},
		{"empty input", "get", ""},
		{"no protocol", "get", "host=git.example:8443\n\n"},
		{"upper-case protocol", "get", "protocol=HTTPS\nhost=git.example:8443\n\n"},
		{"protocol suffix", "get", "protocol=https+evil\nhost=git.example:8443\n\n"},
		{"no port", "get", "protocol=https\nhost=git.example\n\n"},
		{"host prefix", "get", "protocol=https\nhost=git.example:84\n\n"},
		{"host suffix", "get", "protocol=https\nhost=git.example:8443.evil\n\n"},
		{"host glob", "get", "protocol=https\nhost=*\n\n"},
		{"empty host", "get", "protocol=https\nhost=\n\n"},
		{"host after the blank line", "get", "protocol=https\n\nhost=git.example:8443\n"},
		{"another user", "get", "protocol=https\nhost=git.example:8443\nusername=root\n\n"},
		{"last host wins", "get", "protocol=https\nhost=git.example:8443\nhost=evil.example\n\n"},
		{"host with a trailing space", "get", "protocol=https\nhost=git.example:8443 \n\n"},
	}
	for _, c := range cases {
		if got := run(c.action, c.in, env); got != "" {
			t.Errorf("%s: the helper printed %q", c.name, got)
		}
	}
	if got := run("get", "protocol=https\nhost=\n\n", []string{"PATH=/usr/bin:/bin", "CORRAL_GIT_TOKEN_0=tok", "CORRAL_GIT_TOKEN_0_HOST="}); got != "" {
		t.Errorf("an empty configured host matched an empty host: %q", got)
	}
	if got := run("get", "protocol=https\nhost=git.example:8443\n\n", []string{"PATH=/usr/bin:/bin"}); got != "" {
		t.Errorf("no token variables, but the helper printed %q", got)
	}
}
