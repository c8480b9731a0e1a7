package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testApp(t *testing.T, env map[string]string) (*app, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}, &out, &errOut
}

// TestBrokerServeAndEgress runs `git corral broker serve` as start would, sends it one allowed
// and two refused requests, and reads them back with `git corral egress`.
func TestBrokerServeAndEgress(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"CORRAL_HOME": filepath.Join(dir, "corral"), "HOME": dir}
	secretFile := filepath.Join(dir, "secret")
	os.WriteFile(secretFile, []byte("0123456789abcdef0123\n"), 0o600)

	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go http.Serve(up, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))

	pr, pw := io.Pipe()
	var errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: pw, stderr: &errOut, getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- a.main(ctx, []string{"--box", "demo-abc123", "broker", "serve", "--secret-file", secretFile, "--allow", up.Addr().String() + ",example.test"})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v (%s)", err, errOut.String())
	}
	addr := strings.TrimSpace(line)
	proxyAuth := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("demo:0123456789abcdef0123")) + "\r\n"
	for _, req := range []struct {
		raw  string
		want int
	}{
		{"GET http://" + up.Addr().String() + "/ HTTP/1.1\r\n" + proxyAuth + "\r\n", 200},
		{"CONNECT evil.test:443 HTTP/1.1\r\n" + proxyAuth + "\r\n", 403},
		{"CONNECT 10.0.0.1:443 HTTP/1.1\r\n" + proxyAuth + "\r\n", 403},
		{"CONNECT example.test:443 HTTP/1.1\r\n\r\n", 407},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, req.raw)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != req.want {
			t.Errorf("%q: %v %v, want %d", req.raw, resp, err, req.want)
		}
		c.Close()
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("broker serve exited %d: %s", c, errOut.String())
	}

	ea, out, _ := testApp(t, env)
	if c := ea.main(context.Background(), []string{"--box", "demo-abc123", "egress", "--json"}); c != 0 {
		t.Fatalf("egress exited %d", c)
	}
	var doc egressDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Destinations) != 4 || doc.Destinations[0].Decision != "deny" || doc.Destinations[3].Decision != "allow" {
		t.Errorf("destinations %+v: want 4, denials first", doc.Destinations)
	}
	sa, out, errOut2 := testApp(t, env)
	if c := sa.main(context.Background(), []string{"--box", "demo-abc123", "egress", "--suggest"}); c != 0 {
		t.Fatalf("egress --suggest exited %d", c)
	}
	if !strings.Contains(out.String(), `"evil.test",`) || strings.Contains(out.String(), "10.0.0.1") || !strings.Contains(errOut2.String(), "warning") {
		t.Errorf("suggest printed %q / %q", out.String(), errOut2.String())
	}
	la, out, _ := testApp(t, env)
	la.main(context.Background(), []string{"--box", "demo-abc123", "egress", "--denials", "1", "--json"})
	if n := strings.Count(out.String(), "\n"); n != 1 || !strings.Contains(out.String(), `"status":407`) {
		t.Errorf("--denials 1 printed %q", out.String())
	}
}

// TestBrokerSecretSources: the secret comes from a private file, stdin or the environment, never
// from argv, and a world-readable file is refused.
func TestBrokerSecretSources(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("0123456789abcdef0123"), 0o644)
	a, _, errOut := testApp(t, map[string]string{"CORRAL_HOME": dir})
	if c := a.main(context.Background(), []string{"--box", "b-1", "broker", "serve", "--secret-file", open}); c != 1 || !strings.Contains(errOut.String(), "readable by other users") {
		t.Errorf("world-readable secret: exit %d, %s", c, errOut.String())
	}
	a, _, errOut = testApp(t, map[string]string{"CORRAL_HOME": dir})
	if c := a.main(context.Background(), []string{"--box", "b-1", "broker", "serve", "--secret", "0123456789abcdef0123"}); c != exitUsage {
		t.Errorf("--secret on argv: exit %d, want %d: %s", c, exitUsage, errOut.String())
	}
	a, _, errOut = testApp(t, map[string]string{"CORRAL_HOME": dir})
	if c := a.main(context.Background(), []string{"--box", "b-1", "broker", "serve"}); c != 1 || !strings.Contains(errOut.String(), "never on the command line") {
		t.Errorf("no secret: exit %d, %s", c, errOut.String())
	}
	a, _, _ = testApp(t, map[string]string{"CORRAL_HOME": dir})
	a.stdin = strings.NewReader("0123456789abcdef0123\n")
	if s, err := a.brokerSecret("-"); err != nil || string(s) != "0123456789abcdef0123" {
		t.Errorf("stdin secret %q %v", s, err)
	}
	a, _, _ = testApp(t, map[string]string{brokerSecretEnv: "env-secret-0123456789"})
	if s, err := a.brokerSecret(""); err != nil || string(s) != "env-secret-0123456789" {
		t.Errorf("env secret %q %v", s, err)
	}
	routes := filepath.Join(dir, "routes.json")
	os.WriteFile(routes, []byte(`[{"name":"gh","upstream":"https://api.github.com","header":"Authorization","value":"Bearer t","allow":["GET /repos/*"]}]`), 0o644)
	if _, err := readAPIRoutes(routes); err == nil || !strings.Contains(err.Error(), "readable by other users") {
		t.Errorf("world-readable routes file: %v", err)
	}
	os.Chmod(routes, 0o600)
	if r, err := readAPIRoutes(routes); err != nil || len(r) != 1 || r[0].Value != "Bearer t" {
		t.Errorf("routes %+v %v", r, err)
	}
	os.WriteFile(routes, []byte(`[{"name":"gh","token":"x"}]`), 0o600)
	if _, err := readAPIRoutes(routes); err == nil {
		t.Error("unknown key accepted")
	}
	a, _, errOut = testApp(t, map[string]string{"CORRAL_HOME": dir})
	if c := a.main(context.Background(), []string{"--box", "../x", "egress"}); c != exitUsage {
		t.Errorf("--box ../x: exit %d %s", c, errOut.String())
	}
}
