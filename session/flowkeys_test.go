package session

// Tests that the trusted-only keys timeout and ssh_agent have their effect in a real session:
// the "guest" is the test sshd on loopback (flow_test.go's testBox), and what the keys change is
// observed on its side.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// TestTimeoutKeyEndsRun: `timeout` ends a run's guest command when it passes (TERM, exit 124)
// and the guest process is gone; the control, a command that ends before its timeout, runs to
// its end. The limit is RunTimeout's with no --timeout flag, as `git corral run` computes it.
func TestTimeoutKeyEndsRun(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	guard := startGuardDaemon(t, reportPass, 0)
	cases := []struct {
		name    string
		timeout time.Duration
		script  string
		killed  bool
	}{
		{"timeout passes", time.Second, `echo $$ > "$1"; exec sleep 30`, true},
		{"control: ends in time", 20 * time.Second, `echo $$ > "$1"; sleep 1; echo done`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := testBox(t, srv, guard, nil)
			b.Config.Timeout = c.timeout
			pidFile := filepath.Join(userDir(t, "timeout"), "pid")
			var out, errb strings.Builder
			start := time.Now()
			err := b.Run(context.Background(), []string{"sh", "-c", c.script, "sh", pidFile}, Streams{Stdout: &out, Stderr: &errb}, RunTimeout(0, false, b.Config))
			took := time.Since(start)
			var gs interface{ GuestStatus() int }
			if !c.killed {
				if err != nil || strings.TrimSpace(out.String()) != "done" {
					t.Fatalf("Run = %v after %s, stdout %q; want the command's own end (stderr %s)", err, took, out.String(), errb.String())
				}
				return
			}
			if !errors.As(err, &gs) || gs.GuestStatus() != 124 {
				t.Fatalf("Run = %v after %s; want the timeout's exit status 124 (stderr %s)", err, took, errb.String())
			}
			if took < c.timeout || took > c.timeout+10*time.Second {
				t.Errorf("the command ended after %s; timeout %s", took, c.timeout)
			}
			b2, _ := os.ReadFile(pidFile)
			pid := strings.TrimSpace(string(b2))
			if pid == "" {
				t.Fatal("the guest command never started: nothing was timed out")
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat("/proc/" + pid); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("guest process %s still runs after the timeout", pid)
				}
			}
		})
	}
}

// sessionHostAgent is sshtest.HostAgent with this package's key comment.
func sessionHostAgent(t *testing.T) (sock, fingerprint string) {
	t.Helper()
	return sshtest.HostAgent(t, "corral-ssh-agent-key")
}

// TestSSHAgentKeyForwards: with ssh_agent the host's agent is forwarded into the session: in the
// guest, SSH_AUTH_SOCK is set and ssh-add lists the host's key; without it (the control, the same
// host agent in SSH_AUTH_SOCK) the guest has no agent and sees no key.
func TestSSHAgentKeyForwards(t *testing.T) {
	sock, fp := sessionHostAgent(t)
	srv := sshtest.Start(t, sshtest.Options{})
	guard := startGuardDaemon(t, reportPass, 0)
	for _, on := range []bool{true, false} {
		b := testBox(t, srv, guard, map[string]string{"SSH_AUTH_SOCK": sock})
		b.Config.SSHAgent = on
		var out, errb bytes.Buffer
		err := b.Run(context.Background(), []string{"sh", "-c", `echo "sock=${SSH_AUTH_SOCK:-none}"; ssh-add -l; echo "rc=$?"`},
			Streams{Stdout: &out, Stderr: &errb}, 0)
		got := out.String()
		t.Logf("ssh_agent = %v: %v\nstdout: %s\nstderr: %s", on, err, got, errb.String())
		if err != nil {
			t.Fatalf("ssh_agent = %v: Run = %v", on, err)
		}
		reached := strings.Contains(got, fp) && strings.Contains(got, "rc=0") && !strings.Contains(got, "sock=none")
		if on && !reached {
			t.Errorf("ssh_agent = true: the guest did not reach the host's agent (want %q listed):\n%s", fp, got)
		}
		if !on && (strings.Contains(got, "corral-ssh-agent-key") || !strings.Contains(got, "sock=none") || strings.Contains(got, "rc=0")) {
			t.Errorf("ssh_agent = false: the guest reached an agent:\n%s", got)
		}
	}
}
