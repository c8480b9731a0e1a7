package broker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChildLifecycle builds the real git-corral, starts a box's broker as a detached child,
// proxies a request through it to an explicitly allowed loopback server, and stops it: after
// that, new connections fail (they never go anywhere else).
func TestChildLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the git-corral binary")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "git-corral")
	build := exec.Command("go", "build", "-o", exe, "../cmd/git-corral")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build git-corral: %v\n%s", err, out)
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "upstream-ok")
	}))
	defer upstream.Close()
	up, _ := url.Parse(upstream.URL)

	secret := NewSecret()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	o := ChildOptions{
		Exe: exe, Box: "child-abc123", Port: port, Allow: []string{up.Host},
		SecretFile: secretFile, EgressLog: filepath.Join(dir, "egress.jsonl"), DiagLog: filepath.Join(dir, "broker.log"),
		Env: []string{"HOME=" + dir, "CORRAL_HOME=" + filepath.Join(dir, "corral"), "PATH=" + os.Getenv("PATH")},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pid, err := StartChild(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer StopChild(pid, o.Box)
	if !ChildRunning(pid, o.Box) || ChildRunning(pid, "other-box") {
		t.Fatalf("ChildRunning(%d) does not recognise the broker of its box only", pid)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if bytes.Contains(cmdline, []byte(secret)) {
		t.Fatal("the secret is on the broker's command line")
	}

	proxy := &url.URL{Scheme: "http", User: url.UserPassword("box", secret), Host: fmt.Sprintf("127.0.0.1:%d", port)}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 10 * time.Second}
	resp, err := client.Get(upstream.URL)
	if err != nil {
		t.Fatalf("request through the broker child: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d through the broker child", resp.StatusCode)
	}

	if err := StopChild(pid, o.Box); err != nil {
		t.Fatal(err)
	}
	if ChildRunning(pid, o.Box) {
		t.Fatal("broker still running after StopChild")
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		c.Close()
		t.Fatal("the broker's port still accepts connections after it was stopped")
	}
}

func TestStartChildRefusesCommaInAllow(t *testing.T) {
	_, err := StartChild(context.Background(), ChildOptions{Allow: []string{"a.com,169.254.169.254"}})
	if err == nil {
		t.Fatal("an allow entry with a comma (which would smuggle a second entry) was accepted")
	}
}

// TestChildArgsRoutes: a child with API routes is told to read them from its inherited pipe,
// and its argv names only their digest, which changes with any credential and never holds it.
func TestChildArgsRoutes(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	routes := []APIRoute{{Name: "a", Upstream: "https://a.example", Header: "X-Key", Value: "sk-host-only", Allow: []string{"GET /*"}}}
	d := RoutesDigest(secret, routes)
	args := strings.Join(childArgs(ChildOptions{Box: "b", Port: 1, APIRoutes: routes, RoutesDigest: d}), " ")
	if !strings.Contains(args, "--api-routes /dev/fd/3 --api-routes-digest "+d) || strings.Contains(args, "sk-host-only") {
		t.Errorf("argv %q", args)
	}
	if strings.Contains(strings.Join(childArgs(ChildOptions{Box: "b", Port: 1}), " "), "--api-routes") {
		t.Error("a child without routes is told to read routes")
	}
	changed := []APIRoute{routes[0]}
	changed[0].Value = "sk-rotated"
	if d == "" || d != RoutesDigest(secret, routes) || d == RoutesDigest(secret, changed) || RoutesDigest(secret, nil) != "" {
		t.Error("the digest does not follow the routes and their credentials")
	}
}
