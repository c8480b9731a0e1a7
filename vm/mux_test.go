package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// The tests in this file relay real sessions through a connection holder to a real OpenSSH
// sshd on loopback (internal/sshtest); they skip without root.

// startMux dials ep, serves a holder for it in a short temp dir and returns the holder's paths
// and a channel with ServeMux's result.
func startMux(t *testing.T, ep Endpoint, o MuxOptions) (MuxPaths, *Client, <-chan error) {
	t.Helper()
	up := dialT(t, ep)
	dir, err := os.MkdirTemp("", "cmux")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := MuxPaths{Dir: filepath.Join(dir, "b")}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- ServeMux(ctx, up, p, o) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(p.Socket()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder's socket did not appear")
		}
	}
	return p, up, done
}

func dialMuxT(t *testing.T, p MuxPaths) *Client {
	t.Helper()
	c, err := DialMux(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMuxRelaysSessions: statuses, both output streams, stdin, environment values, timeouts and
// concurrent sessions behave through the holder exactly as on a direct connection.
// With a warm shell (warm.go), every session that starts with exec runs in the shell the holder
// started before it.
func TestMuxRelaysSessions(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) { testMuxRelaysSessions(t, warm) })
	}
}

func testMuxRelaysSessions(t *testing.T, warm bool) {
	srv, ep := testBox(t, sshtest.Options{AcceptEnv: "*"})
	p, _, _ := startMux(t, ep, MuxOptions{Idle: time.Minute, WarmShell: warm})
	c := dialMuxT(t, p)
	ctx := context.Background()
	for _, tc := range []struct {
		script         string
		code           int
		stdout, stderr string
	}{
		{"true", 0, "", ""},
		{"echo out; echo err >&2; exit 7", 7, "out\n", "err\n"},
		{"kill -TERM $$", 143, "", ""},
	} {
		var stdout, stderr bytes.Buffer
		code, err := c.Run(ctx, SessionOptions{Argv: []string{"sh", "-c", tc.script}, Stdout: &stdout, Stderr: &stderr})
		if code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
			t.Errorf("%q: exit %d (%v) stdout %q stderr %q; want %d %q %q", tc.script, code, err, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
	// Commands that end at once race their own exec reply through the relay.
	for i := range 40 {
		if _, code, err := c.Output(ctx, []string{"sh", "-c", "exit 3"}); code != 3 || err != nil {
			t.Fatalf("quick session %d: exit %d (%v), want 3", i, code, err)
		}
	}
	in := bytes.Repeat([]byte("0123456789abcdef\n"), 1<<16)
	var out bytes.Buffer
	if code, err := c.Run(ctx, SessionOptions{Argv: []string{"cat"}, Stdin: bytes.NewReader(in), Stdout: &out}); code != 0 || !bytes.Equal(out.Bytes(), in) {
		t.Errorf("cat of 1.1 MB: exit %d (%v), %d bytes back", code, err, out.Len())
	}
	secret := randomHex(16)
	got, _, err := c.Output(ctx, []string{"sh", "-c", `printf %s "$CORRAL_T"`})
	if err != nil || string(got) != "" {
		t.Fatalf("unset variable: %q %v", got, err)
	}
	var envOut bytes.Buffer
	if code, err := c.Run(ctx, SessionOptions{Argv: []string{"sh", "-c", `printf %s "$CORRAL_T"`}, Env: map[string]string{"CORRAL_T": secret}, Stdout: &envOut}); code != 0 || envOut.String() != secret {
		t.Errorf("environment through the holder: exit %d (%v), got %q", code, err, envOut.String())
	}
	began := time.Now()
	code, _ := c.Run(ctx, SessionOptions{Argv: []string{"sleep", "60"}, Timeout: 500 * time.Millisecond})
	if code != ExitTimeout || time.Since(began) > 20*time.Second {
		t.Errorf("timeout through the holder: exit %d after %v, want %d quickly", code, time.Since(began), ExitTimeout)
	}
	if ps, _ := exec.Command("pgrep", "-u", srv.User, "-x", "sleep").Output(); len(ps) > 0 {
		t.Errorf("the timed-out guest command still runs: pids %s", ps)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, code, err := c.Output(ctx, []string{"sh", "-c", fmt.Sprintf("sleep 0.2; echo %d", i)})
			if err != nil || code != 0 || string(o) != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Errorf("session %d: %q %d %v", i, o, code, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMuxRefusesOtherChannelsAndUsers: only session channels are relayed, and a process of
// another user that reaches the socket gets no SSH at all.
func TestMuxRefusesOtherChannelsAndUsers(t *testing.T) {
	_, ep := testBox(t, sshtest.Options{})
	p, _, _ := startMux(t, ep, MuxOptions{Idle: time.Minute, WarmShell: true})
	c := dialMuxT(t, p)
	if _, _, err := c.ssh.OpenChannel("direct-tcpip", nil); err == nil || !strings.Contains(err.Error(), "session channels only") {
		t.Errorf("direct-tcpip through the holder: %v, want refused", err)
	}
	// Open the directory and socket to everyone, so that only the peer check stands between
	// another user and the box.
	for _, f := range []string{filepath.Dir(p.Dir), p.Dir, p.Socket()} {
		if err := os.Chmod(f, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	py := fmt.Sprintf("import socket; s = socket.socket(socket.AF_UNIX); s.connect(%q); s.settimeout(5); print(repr(s.recv(64)))", p.Socket())
	out, err := exec.Command("runuser", "-u", "nobody", "--", "python3", "-c", py).CombinedOutput()
	if err != nil {
		t.Fatalf("connect as nobody: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "SSH-") || !strings.Contains(string(out), "b''") {
		t.Errorf("another user's process got %s from the holder, want the connection closed at once", out)
	}
	if _, code, err := c.Output(context.Background(), []string{"true"}); code != 0 || err != nil {
		t.Errorf("own session after the refused peer: %d %v", code, err)
	}
}

// TestMuxLifecycle: one holder per box; the holder ends and removes its socket when the box
// connection ends, and after the idle time with no client.
func TestMuxLifecycle(t *testing.T) {
	_, ep := testBox(t, sshtest.Options{})
	p, up, done := startMux(t, ep, MuxOptions{Idle: time.Minute, WarmShell: true})
	second := dialT(t, ep)
	if err := ServeMux(context.Background(), second, p, MuxOptions{Idle: time.Minute}); err != nil {
		t.Errorf("a second holder for the same box: %v, want it to leave at once", err)
	}
	if _, code, err := dialMuxT(t, p).Output(context.Background(), []string{"true"}); code != 0 || err != nil {
		t.Errorf("the first holder stopped serving: %d %v", code, err)
	}
	up.ssh.Close() // the box went away
	select {
	case err := <-done:
		if !errors.Is(err, ErrConnectionLost) {
			t.Errorf("holder ended with %v, want ErrConnectionLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the holder outlived its box connection")
	}
	if _, err := os.Stat(p.Socket()); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if _, err := DialMux(context.Background(), p); !errors.Is(err, ErrNoMux) {
		t.Errorf("DialMux with no holder: %v, want ErrNoMux", err)
	}

	p2, _, done2 := startMux(t, ep, MuxOptions{Idle: 300 * time.Millisecond, WarmShell: true})
	c := dialMuxT(t, p2)
	time.Sleep(600 * time.Millisecond)
	select {
	case err := <-done2:
		t.Fatalf("holder ended (%v) while a client was connected", err)
	default:
	}
	c.Close()
	select {
	case err := <-done2:
		if err != nil {
			t.Errorf("idle holder ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the holder did not end after its idle time")
	}
}
