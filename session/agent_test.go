package session

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

// TestAgentSocketWarns: with ssh_agent and a host agent, a session forwards SSH_AUTH_SOCK and
// warns once, naming the box; without ssh_agent nothing is forwarded and nothing is said.
func TestAgentSocketWarns(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", filepath.Join(t.TempDir(), "agent.sock"))

	var errb bytes.Buffer
	req := Request{Getenv: os.Getenv, UI: UI{Warn: func(m string) { fmt.Fprintf(&errb, "corral: warning: %s\n", m) }}}
	cfg := policy.Default()
	cfg.SSHAgent = true
	sock, err := (&Box{Name: "b-1234", Config: cfg, req: req}).agentSocket()
	if err != nil || sock != os.Getenv("SSH_AUTH_SOCK") {
		t.Fatalf("agentSocket = %q, %v", sock, err)
	}
	if w := errb.String(); strings.Count(w, "\n") != 1 || !strings.Contains(w, "warning: ssh_agent") || !strings.Contains(w, "b-1234") {
		t.Errorf("warning %q: want one line naming the box", w)
	}
	cfg.SSHAgent = false
	errb.Reset()
	if sock, err := (&Box{Name: "b", Config: cfg, req: req}).agentSocket(); sock != "" || err != nil || errb.Len() != 0 {
		t.Errorf("without ssh_agent: %q, %v, warning %q; want nothing forwarded, no warning", sock, err, errb.String())
	}
}
