package vm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// hostAgent starts a real ssh-agent on a socket in a temp dir holding one fresh key, and
// returns the socket and the key's fingerprint line as ssh-add -l prints it.
func hostAgent(t *testing.T) (sock, fingerprint string) {
	t.Helper()
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (openssh-client): %v", tool, err)
		}
	}
	dir := t.TempDir()
	sock = filepath.Join(dir, "agent.sock")
	agentCmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentCmd.Process.Kill(); agentCmd.Wait() })
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	key := filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "corral-agent-test", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	add := exec.Command("ssh-add", key)
	add.Env = []string{"SSH_AUTH_SOCK=" + sock}
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	list := exec.Command("ssh-add", "-l")
	list.Env = []string{"SSH_AUTH_SOCK=" + sock}
	out, err := list.Output()
	if err != nil || !strings.Contains(string(out), "corral-agent-test") {
		t.Fatalf("ssh-add -l: %v %s", err, out)
	}
	return sock, strings.TrimSpace(string(out))
}

// TestAgentForwarding runs sessions against a real sshd with a real host ssh-agent: a session
// that names the agent's socket lists its key with ssh-add inside the session; a session that
// does not (on the same connection and on a fresh one, with SSH_AUTH_SOCK set in git corral's
// own environment) cannot reach it.
func TestAgentForwarding(t *testing.T) {
	sock, fp := hostAgent(t)
	t.Setenv("SSH_AUTH_SOCK", sock) // must not matter: only SessionOptions.AgentSocket forwards
	_, ep := testBox(t, sshtest.Options{})
	c := dialT(t, ep)
	ctx := context.Background()
	run := func(c *Client, agentSock string) (int, string) {
		var out, errb bytes.Buffer
		code, err := c.Run(ctx, SessionOptions{
			Argv:   []string{"sh", "-c", `echo "sock=${SSH_AUTH_SOCK:-none}"; ssh-add -l; echo "rc=$?"`},
			Stdout: &out, Stderr: &errb, AgentSocket: agentSock,
		})
		t.Logf("session (agent %q): exit %d %v\nstdout: %s\nstderr: %s", agentSock, code, err, out.String(), errb.String())
		return code, out.String()
	}
	if _, out := run(c, ""); !strings.Contains(out, "sock=none") || strings.Contains(out, "corral-agent-test") || !strings.Contains(out, "rc=2") {
		t.Errorf("without forwarding the session reached an agent:\n%s", out)
	}
	code, out := run(c, sock)
	if code != 0 || strings.Contains(out, "sock=none") || !strings.Contains(out, fp) || !strings.Contains(out, "rc=0") {
		t.Errorf("with forwarding: exit %d, want the host key %q listed:\n%s", code, fp, out)
	}
	// OpenSSH's sshd keeps the forwarded socket for the whole connection and names it in later
	// sessions too; the client rejects their agent channels, so the key stays out of reach.
	if _, out := run(c, ""); strings.Contains(out, "corral-agent-test") || strings.Contains(out, "rc=0") {
		t.Errorf("a later session on the same connection reached the agent:\n%s", out)
	}
	if _, out := run(dialT(t, ep), ""); !strings.Contains(out, "sock=none") {
		t.Errorf("a fresh connection reached the agent:\n%s", out)
	}
	if code, _ := run(c, filepath.Join(t.TempDir(), "no-agent.sock")); code != ExitSessionFailure {
		t.Errorf("an unreachable agent socket: exit %d, want %d before anything runs", code, ExitSessionFailure)
	}
}
