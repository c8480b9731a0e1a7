package vm

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// fakeGuardDaemon listens on a unix socket the test user can reach and answers every
// connection with report, as the guest's guardd does; it returns the socket's path.
func fakeGuardDaemon(t *testing.T, report string) string {
	t.Helper()
	dir := userDir(t, "guardd", 0o755)
	path := filepath.Join(dir, "guard.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	os.Chmod(path, 0o666)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(report))
			c.Close()
		}
	}()
	return path
}

// TestGuardReport asks a stand-in guard daemon through the real sshd's stream-local forwarding,
// directly and through a connection holder: a passing report passes, a failing one refuses
// naming its guards, an unreadable one refuses, a missing daemon is ErrNoGuardDaemon (the
// caller checks another way), and the holder forwards to no other socket.
func TestGuardReport(t *testing.T) {
	_, ep := testBox(t, sshtest.Options{})
	pass := fakeGuardDaemon(t, `{"ok":true,"mode":"offline","failures":[]}`+"\n")
	fail := fakeGuardDaemon(t, `{"ok":false,"mode":"offline","failures":["box user is in root-equivalent groups: disk"]}`+"\n")
	garbled := fakeGuardDaemon(t, `{"ok":tr`)
	other := fakeGuardDaemon(t, `{"ok":true,"mode":"offline","failures":[]}`+"\n")
	missing := filepath.Join(filepath.Dir(pass), "absent.sock")
	ctx := context.Background()

	direct := dialT(t, ep)
	p, _, _ := startMux(t, ep, MuxOptions{Idle: time.Minute, Sockets: []string{pass, fail, garbled, missing}, WarmShell: true})
	held := dialMuxT(t, p)
	for name, c := range map[string]*Client{"direct": direct, "through the holder": held} {
		// The answer comes at once: the holder must pass the daemon's end on (sshd waits for
		// the client's EOF before it closes the channel), not leave it to the read timeout.
		start := time.Now()
		if out, err := c.GuardReport(ctx, pass); err != nil || !out.Report.OK {
			t.Errorf("%s: passing daemon: %+v, %v", name, out, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: the report took %s", name, d)
		}
		if _, err := c.GuardReport(ctx, fail); !errors.Is(err, ErrGuard) || !strings.Contains(err.Error(), "root-equivalent groups: disk") {
			t.Errorf("%s: failing daemon: %v", name, err)
		}
		if _, err := c.GuardReport(ctx, garbled); !errors.Is(err, ErrGuard) || !strings.Contains(err.Error(), "unreadable") {
			t.Errorf("%s: garbled report: %v", name, err)
		}
		if _, err := c.GuardReport(ctx, missing); !errors.Is(err, ErrNoGuardDaemon) {
			t.Errorf("%s: no daemon: %v, want ErrNoGuardDaemon", name, err)
		}
	}
	if _, err := held.GuardReport(ctx, other); err == nil || !strings.Contains(err.Error(), "forwards only the guard daemon's socket") {
		t.Errorf("the holder forwarded to a socket it was not started with: %v", err)
	}
	if out, err := direct.GuardReport(ctx, other); err != nil || !out.Report.OK {
		t.Errorf("the same socket directly: %+v, %v (the refusal above must be the holder's)", out, err)
	}
}
