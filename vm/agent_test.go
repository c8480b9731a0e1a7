package vm

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// hostAgent is sshtest.HostAgent with this package's key comment.
func hostAgent(t *testing.T) (sock, fingerprint string) {
	t.Helper()
	return sshtest.HostAgent(t, "corral-agent-test")
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
