// Package gittest is a real smart-HTTP git server for tests of git through the broker: git
// http-backend (receive-pack enabled) behind TLS on 127.0.0.1, answering 401 to any request
// that does not carry exactly one Authorization value, and logging every request as
// "METHOD REQUEST-URI auth=token|other|none". Used by broker/, session/ and e2e/.
package gittest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Repo is the repository Seed makes, under the server's root.
const Repo = "o/r.git"

// Basic is the Authorization value git sends for token as its basic credential (the broker's
// "x-access-token" user).
func Basic(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}

// Server is the running server; Root is its GIT_PROJECT_ROOT.
type Server struct {
	*httptest.Server
	Root string
	mu   sync.Mutex
	log  []string
}

// Start starts a server that accepts only auth as the Authorization header. With cert it
// serves that certificate, else httptest's own (trusted by Server.Client()).
func Start(t testing.TB, auth string, cert *tls.Certificate) *Server {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	s := &Server{Root: t.TempDir()}
	backend := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + s.Root}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := "none"
		switch v := r.Header.Values("Authorization"); {
		case len(v) == 1 && v[0] == auth:
			got = "token"
		case len(v) > 0:
			got = "other"
		}
		s.mu.Lock()
		s.log = append(s.log, fmt.Sprintf("%s %s auth=%s", r.Method, r.URL.RequestURI(), got))
		s.mu.Unlock()
		if got != "token" {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "credential required", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		backend.ServeHTTP(w, r)
	}))
	if cert != nil {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// Log returns the lines logged so far.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Requests returns the logged lines that contain substr.
func (s *Server) Requests(substr string) []string {
	var out []string
	for _, l := range s.Log() {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// Git runs the host's git on the server's side, hermetically, and returns its output.
func (s *Server) Git(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = []string{"HOME=" + s.Root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Seed makes Repo, a bare repository that accepts pushes, holding main with one commit.
func (s *Server) Seed(t testing.TB) {
	t.Helper()
	seed, bare := t.TempDir(), filepath.Join(s.Root, Repo)
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", bare},
		{"-C", bare, "config", "http.receivepack", "true"},
		{"init", "-q", "-b", "main", seed},
		{"-C", seed, "-c", "user.name=Seed", "-c", "user.email=seed@example.invalid", "commit", "-q", "--allow-empty", "-m", "seed"},
		{"-C", seed, "push", "-q", bare, "main"},
	} {
		s.Git(t, args...)
	}
}

// LocalhostCert returns a self-signed certificate for localhost and its PEM, for a broker child
// (a separate process, which takes its roots from SSL_CERT_FILE).
func LocalhostCert(t testing.TB) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(6 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
