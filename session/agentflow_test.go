package session

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// TestRunAgentAuth runs a session through a real sshd: with default_agent naming claude, the
// command (here env) gets claude's auth variable from the host through the SSH channel, not
// another agent's; the audit record names it and carries the user's argv; its value is in no
// file under $CORRAL_HOME. With no_env_passthrough (the control for the refusal) it is absent
// and the notice names it. The prelude passes every argument through intact.
func TestRunAgentAuth(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{AcceptEnv: "CORRAL_* LANG ANTHROPIC_* OPENAI_*"})
	const secret = "sk-ant-fake-0123456789-in-the-channel-only"
	t.Setenv("ANTHROPIC_API_KEY", secret)
	t.Setenv("OPENAI_API_KEY", "sk-openai-fake-not-for-claude")
	for _, noPass := range []bool{false, true} {
		guard := startGuardDaemon(t, reportPass, 0)
		b := testBox(t, srv, guard, map[string]string{"HOME": t.TempDir()})
		b.Config.DefaultAgent, b.Config.AgentState, b.Config.NoEnvPassthrough = "claude --version", AgentStateIsolated, noPass
		var notices []string
		b.req.UI.Notice = func(m string) { notices = append(notices, m) }
		var err error
		if b.Agents, err = AgentMounts(b.Manager.Home, b.Name, AgentStateIsolated, t.TempDir(), nil); err != nil {
			t.Fatal(err)
		}
		var out, errb strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = b.Run(ctx, []string{"env"}, Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}, 0)
		cancel()
		if err != nil {
			t.Fatalf("no_env_passthrough=%v: Run = %v; stderr %s", noPass, err, errb.String())
		}
		has := strings.Contains(out.String(), "ANTHROPIC_API_KEY="+secret+"\n")
		if has == noPass {
			t.Errorf("no_env_passthrough=%v: claude's key in the box's env = %v", noPass, has)
		}
		if strings.Contains(out.String(), "OPENAI_API_KEY") {
			t.Errorf("no_env_passthrough=%v: codex's key reached a claude session", noPass)
		}
		if noPass && !slices.ContainsFunc(notices, func(n string) bool { return strings.Contains(n, "ANTHROPIC_API_KEY (claude auth; no_env_passthrough)") }) {
			t.Errorf("no notice names the dropped key: %q", notices)
		}
		rs := records(t, b)
		if events(rs) != "launch,exit" || !slices.Equal(rs[0].Argv, []string{"env"}) || slices.Contains(rs[0].EnvNames, "ANTHROPIC_API_KEY") == noPass {
			t.Errorf("no_env_passthrough=%v: audit %q, launch %+v", noPass, events(rs), rs[0])
		}
		filepath.WalkDir(b.Manager.Home.Dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if data, _ := os.ReadFile(p); strings.Contains(string(data), secret) {
					t.Errorf("the key's value is in %s", p)
				}
			}
			return nil
		})
	}
	guard := startGuardDaemon(t, reportPass, 0)
	b := testBox(t, srv, guard, nil)
	b.Config.AgentState = AgentStateIsolated
	b.Agents, _ = AgentMounts(b.Manager.Home, b.Name, AgentStateIsolated, t.TempDir(), nil)
	var out strings.Builder
	if err := b.Run(context.Background(), []string{"printf", "%s|", "a b", "$(id)", "--", "x'y"}, Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}, 0); err != nil || out.String() != "a b|$(id)|--|x'y|" {
		t.Errorf("through the prelude: %q, %v", out.String(), err)
	}
}
