package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// TestAgentFor: the session's agent is the one the command's first word names, else
// default_agent's; a look-alike name is no agent.
func TestAgentFor(t *testing.T) {
	for _, c := range []struct {
		argv []string
		def  string
		want string
	}{
		{[]string{"claude", "--version"}, "", "claude"},
		{[]string{vm.AgentBinGuest + "/codex"}, "claude", "codex"},
		{[]string{"env"}, "claude --version", "claude"},
		{nil, "gemini", "gemini"},
		{[]string{"gemini"}, "claude", "gemini"},
		{[]string{"env"}, "", ""},
		{nil, "", ""},
		{[]string{"claude-evil"}, "", ""},
		{[]string{"env"}, "bash -c claude", ""},
	} {
		a, ok := AgentFor(c.argv, c.def)
		if got := a.Name; ok != (c.want != "") || got != c.want {
			t.Errorf("AgentFor(%q, %q) = %q %v, want %q", c.argv, c.def, got, ok, c.want)
		}
	}
}

// TestAgentAuthEnv is the table of agent × host variables × no_env_passthrough × API broker:
// only the session agent's own variables that are set are forwarded; another agent's never;
// no_env_passthrough and a broker-held key forward none and say so by name.
func TestAgentAuthEnv(t *testing.T) {
	host := map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "CLAUDE_CODE_OAUTH_TOKEN": "oat", "OPENAI_API_KEY": "sk-oai", "GEMINI_API_KEY": "g"}
	lookup := func(n string) (string, bool) { v, ok := host[n]; return v, ok }
	none := func(policy.Config, string) bool { return false }
	held := func(_ policy.Config, n string) bool { return n == "ANTHROPIC_API_KEY" }
	for _, c := range []struct {
		name        string
		agent       string
		noPass      bool
		held        func(policy.Config, string) bool
		want, notes []string
	}{
		{"claude", "claude", false, none, []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}, nil},
		{"codex", "codex", false, none, []string{"OPENAI_API_KEY"}, nil},
		{"gemini", "gemini", false, none, []string{"GEMINI_API_KEY"}, nil},
		{"no agent", "", false, none, nil, nil},
		{"no_env_passthrough", "claude", true, none, nil, []string{"ANTHROPIC_API_KEY (claude auth; no_env_passthrough)", "CLAUDE_CODE_OAUTH_TOKEN (claude auth; no_env_passthrough)"}},
		{"held by the API broker", "claude", false, held, []string{"CLAUDE_CODE_OAUTH_TOKEN"}, []string{"ANTHROPIC_API_KEY (claude auth; held by the API broker on the host)"}},
	} {
		a, ok := agents.Agent{}, false
		if c.agent != "" {
			var err error
			a, err = agents.Lookup(c.agent)
			ok = err == nil
		}
		cfg := policy.Default()
		cfg.NoEnvPassthrough = c.noPass
		names, notes := agentAuthEnv(a, ok, cfg, lookup, c.held)
		if !slices.Equal(names, c.want) || !slices.Equal(notes, c.notes) {
			t.Errorf("%s: forwards %q (notes %q), want %q (%q)", c.name, names, notes, c.want, c.notes)
		}
	}
}

// TestAgentArgvRefuses: a state path or agent name that would leave the home, or carry a line
// break, is refused; a root other than the two mounts is refused; the control wraps.
func TestAgentArgvRefuses(t *testing.T) {
	for _, a := range []agents.Agent{
		{Name: "x", StateDirs: []string{"../.ssh"}}, {Name: "x", StateDirs: []string{"/etc"}}, {Name: "x", StateDirs: []string{"a\nb"}},
		{Name: "x", StateDirs: []string{".."}}, {Name: "x", StateDirs: []string{"a/../../b"}}, {Name: "x", StateDirs: []string{""}},
		{Name: "../x", StateDirs: []string{".x"}}, {Name: "--", StateDirs: []string{".x"}},
		{Name: "x", StateFiles: []string{"../.ssh/id_ed25519"}}, {Name: "x", StateFiles: []string{"/etc/passwd"}},
		{Name: "x", StateFiles: []string{"a\nb"}}, {Name: "x", StateFiles: []string{""}},
	} {
		if _, err := agentArgv([]string{"true"}, vm.AgentStateGuest, []agents.Agent{a}); err == nil {
			t.Errorf("agentArgv accepted %+v", a)
		}
	}
	if _, err := agentArgv(nil, "/etc", nil); err == nil {
		t.Error("agentArgv accepted root /etc")
	}
	claude, _ := agents.Lookup("claude")
	got, err := agentArgv([]string{"claude", "--version"}, vm.AgentStateGuest, []agents.Agent{claude})
	want := []string{"/bin/sh", "-c", agentPrelude, "corral-agent", vm.AgentStateGuest, "claude", ".claude", "claude", ".claude.json", "--", "claude", "--version"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("control: %q, %v", got, err)
	}
}

// TestAgentPrelude runs the prelude in sh against a stand-in state root: it links each
// prepared agent's state paths into $HOME (replacing a stale link, leaving a real directory
// alone with a warning, skipping an agent without a state directory), then runs the command
// with every argument intact (a builtin too), or the login shell when there is none.
func TestAgentPrelude(t *testing.T) {
	dir := t.TempDir()
	state, home := filepath.Join(dir, "state"), filepath.Join(dir, "home")
	for _, d := range []string{state + "/claude/.claude", state + "/codex", home + "/.codex", home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/stale", filepath.Join(home, ".claude.json"))
	shell := filepath.Join(dir, "login-shell")
	os.WriteFile(shell, []byte("#!/bin/sh\necho \"login shell $*\"\n"), 0o755)
	run := func(args ...string) (string, string) {
		cmd := exec.Command("/bin/sh", append([]string{"-c", agentPrelude, "corral-agent", state,
			"claude", ".claude", "claude", ".claude.json", "codex", ".codex", "gemini", ".gemini", "--"}, args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "SHELL=" + shell}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("prelude %q: %v: %s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	out, stderr := run("printf", "%s|", "a b", "$(id)", "x\ny", "--")
	if out != "a b|$(id)|x\ny|--|" {
		t.Errorf("arguments reached the command as %q", out)
	}
	for link, target := range map[string]string{".claude": state + "/claude/.claude", ".claude.json": state + "/claude/.claude.json"} {
		if got, err := os.Readlink(filepath.Join(home, link)); err != nil || got != target {
			t.Errorf("~/%s -> %q (%v), want %q", link, got, err, target)
		}
	}
	if fi, err := os.Lstat(filepath.Join(home, ".codex")); err != nil || !fi.IsDir() || !strings.Contains(stderr, home+"/.codex is the box's own") {
		t.Errorf("a real ~/.codex: %v %v, stderr %q; want it left alone with a warning", fi, err, stderr)
	}
	if _, err := os.Lstat(filepath.Join(home, ".gemini")); err == nil {
		t.Error("~/.gemini linked though gemini has no state directory")
	}
	if out, _ := run("cd", "/"); out != "" {
		t.Errorf("builtin: %q", out)
	}
	if out, _ := run(); out != "login shell -l\n" {
		t.Errorf("no command ran %q, want the login shell", out)
	}
}

// TestAuthHeldByBroker: the real hook — with the built-in anthropic route in api_brokers,
// ANTHROPIC_API_KEY stays on the host (the broker adds it) while the claude session still gets
// its other auth variable; the control without the route forwards both.
func TestAuthHeldByBroker(t *testing.T) {
	host := map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "CLAUDE_CODE_OAUTH_TOKEN": "oat"}
	lookup := func(n string) (string, bool) { v, ok := host[n]; return v, ok }
	claude, err := agents.Lookup("claude")
	if err != nil {
		t.Fatal(err)
	}
	cfg := policy.Default()
	names, _ := agentAuthEnv(claude, true, cfg, lookup, authHeldByBroker)
	if !slices.Equal(names, []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}) {
		t.Fatalf("control, no route: forwards %q", names)
	}
	cfg.APIBrokers = []string{"anthropic"}
	names, notes := agentAuthEnv(claude, true, cfg, lookup, authHeldByBroker)
	if !slices.Equal(names, []string{"CLAUDE_CODE_OAUTH_TOKEN"}) || len(notes) != 1 || !strings.Contains(notes[0], "ANTHROPIC_API_KEY") {
		t.Errorf("with the anthropic route: forwards %q, notes %q; want the key held on the host", names, notes)
	}
}
