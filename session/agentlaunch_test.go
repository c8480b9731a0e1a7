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

// TestAgentLinksRefuses: a state path or agent name that would leave the home, or carry a line
// break, is refused; a root other than the two mounts is refused; the control is the prelude.
func TestAgentLinksRefuses(t *testing.T) {
	for _, a := range []agents.Agent{
		{Name: "x", StateDirs: []string{"../.ssh"}}, {Name: "x", StateDirs: []string{"/etc"}}, {Name: "x", StateDirs: []string{"a\nb"}},
		{Name: "x", StateDirs: []string{".."}}, {Name: "x", StateDirs: []string{"a/../../b"}}, {Name: "x", StateDirs: []string{""}},
		{Name: "../x", StateDirs: []string{".x"}}, {Name: "--", StateDirs: []string{".x"}},
		{Name: "x", StateFiles: []string{"../.ssh/id_ed25519"}}, {Name: "x", StateFiles: []string{"/etc/passwd"}},
		{Name: "x", StateFiles: []string{"a\nb"}}, {Name: "x", StateFiles: []string{""}},
	} {
		if _, err := agentLinks(vm.AgentStateGuest, []agents.Agent{a}); err == nil {
			t.Errorf("agentLinks accepted %+v", a)
		}
	}
	if _, err := agentLinks("/etc", nil); err == nil {
		t.Error("agentLinks accepted root /etc")
	}
	claude, _ := agents.Lookup("claude")
	got, err := agentLinks(vm.AgentStateGuest, []agents.Agent{claude})
	want := []string{agentLink, vm.AgentStateGuest + " claude .claude claude .claude.json", vm.AgentStateGuest, "claude", ".claude", "claude", ".claude.json"}
	if err != nil || got.Script != agentPrelude || !slices.Equal(got.Args, want) {
		t.Errorf("control: %q, %v", got.Args, err)
	}
}

// preludeBox is a stand-in box user's home and state root for the prelude, with every
// catalogue agent's state directories made as the host makes them (PrepareAgentState).
func preludeBox(t *testing.T) (dir, state, home string) {
	dir = t.TempDir()
	state, home = filepath.Join(dir, "state"), filepath.Join(dir, "home")
	for _, d := range []string{state + "/claude/.claude", state + "/codex/.codex", state + "/gemini/.gemini", home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir, state, home
}

// standIn is the prelude agentLinks makes for the whole catalogue, with a stand-in root.
func standIn(root string) vm.Prelude {
	pairs := []string{"claude", ".claude", "claude", ".claude.json", "codex", ".codex", "gemini", ".gemini"}
	return vm.Prelude{Script: agentPrelude, Args: append([]string{agentLink, linkSet(root, pairs), root}, pairs...)}
}

// preludeLine is the session's command line for argv after the prelude, as vm builds it.
func preludeLine(t *testing.T, state string, argv ...string) string {
	t.Helper()
	line, err := vm.CommandLine(argv, "", standIn(state))
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// TestAgentPrelude runs the session's command line in sh and bash against a stand-in state
// root: the prelude links each prepared agent's state paths into $HOME (replacing a stale
// link, leaving a real directory alone with a warning, skipping an agent without a state
// directory), puts the store on PATH only when it is there, and the command runs with every
// argument intact (a builtin too), or the login shell when there is none.
func TestAgentPrelude(t *testing.T) {
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		dir, state, home := preludeBox(t)
		os.RemoveAll(state + "/gemini")
		os.RemoveAll(state + "/codex/.codex")
		os.MkdirAll(home+"/.codex", 0o700)
		os.Symlink("/stale", filepath.Join(home, ".claude.json"))
		login := filepath.Join(dir, "login-shell")
		os.WriteFile(login, []byte("#!/bin/sh\necho \"login shell $*\"\n"), 0o755)
		run := func(args ...string) (string, string) {
			cmd := exec.Command(shell, "-c", preludeLine(t, state, args...))
			cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "SHELL=" + login}
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: prelude %q: %v: %s", shell, args, err, errb.String())
			}
			return out.String(), errb.String()
		}
		out, stderr := run("printf", "%s|", "a b", "$(id)", "x\ny", "--", "$corral_state")
		if out != "a b|$(id)|x\ny|--|$corral_state|" {
			t.Errorf("%s: arguments reached the command as %q", shell, out)
		}
		for link, target := range map[string]string{".claude": state + "/claude/.claude", ".claude.json": state + "/claude/.claude.json"} {
			if got, err := os.Readlink(filepath.Join(home, link)); err != nil || got != target {
				t.Errorf("%s: ~/%s -> %q (%v), want %q", shell, link, got, err, target)
			}
		}
		if fi, err := os.Lstat(filepath.Join(home, ".codex")); err != nil || !fi.IsDir() || !strings.Contains(stderr, home+"/.codex is the box's own") {
			t.Errorf("%s: a real ~/.codex: %v %v, stderr %q; want it left alone with a warning", shell, fi, err, stderr)
		}
		if _, err := os.Lstat(filepath.Join(home, ".gemini")); err == nil {
			t.Errorf("%s: ~/.gemini linked though gemini has no state directory", shell)
		}
		if out, _ := run("sh", "-c", `echo "$PATH"`); out != "/usr/bin:/bin\n" {
			t.Errorf("%s: PATH %q without the store, want it unchanged", shell, out)
		}
		if out, _ := run("cd", "/"); out != "" {
			t.Errorf("%s: builtin: %q", shell, out)
		}
		if out, _ := run(); out != "login shell -l\n" {
			t.Errorf("%s: no command ran %q, want the login shell", shell, out)
		}
	}
}

// TestAgentPreludeStartsNoProcess runs the session's command line in bash (the box user's
// shell) in a PID namespace of its own, the command exec'd as every program is, and reads the
// namespace's last PID from the command: the first session of a box makes the links (mkdir,
// ln: processes, the control); every later one, with the links in place and ~/.claude.json
// not made yet by claude, starts none. A removed link, or a new set (another root), is made
// again; a link the box user re-pointed stays while the set is the same (the rules).
func TestAgentPreludeStartsNoProcess(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare (util-linux) is needed: %v", err)
	}
	dir, state, home := preludeBox(t)
	run := func(root string) string {
		t.Helper()
		// cat, not the shell's read, which reads a byte at a time and gets only the first
		// digit from a sysctl file.
		line, err := vm.CommandLine([]string{"/bin/cat", "/proc/sys/kernel/ns_last_pid"}, "", standIn(root))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("unshare", "--user", "--map-root-user", "--pid", "--fork", "/bin/bash", "-c", line)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("prelude in a PID namespace: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	links := func(root string) {
		t.Helper()
		for _, rel := range []string{".claude", ".claude.json", ".codex"} {
			agent := strings.TrimSuffix(strings.TrimPrefix(rel, "."), ".json")
			if got, err := os.Readlink(filepath.Join(home, rel)); err != nil || got != root+"/"+agent+"/"+rel {
				t.Errorf("~/%s -> %q (%v), want %q", rel, got, err, root+"/"+agent+"/"+rel)
			}
		}
	}
	if n := run(state); n == "1" {
		t.Errorf("first session: last PID %s, want the processes that made the links (the control)", n)
	}
	links(state)
	for i := 2; i <= 3; i++ {
		if n := run(state); n != "1" {
			t.Errorf("session %d with the links in place: last PID %s, want 1 (no process before the command)", i, n)
		}
	}
	links(state)
	// Re-pointed by the box user: left while the set is the same. Removed: made again.
	os.Remove(filepath.Join(home, ".claude"))
	os.Symlink(dir, filepath.Join(home, ".claude"))
	os.Remove(filepath.Join(home, ".codex"))
	if n := run(state); n == "1" {
		t.Error("a removed link: no process ran, want it made again")
	}
	if got, _ := os.Readlink(filepath.Join(home, ".codex")); got != state+"/codex/.codex" {
		t.Errorf("removed ~/.codex -> %q, want it made again", got)
	}
	if got, _ := os.Readlink(filepath.Join(home, ".claude")); got != dir {
		t.Errorf("re-pointed ~/.claude -> %q, want it left to the box user while the set is the same", got)
	}
	// Another set (a new root: agent_state changed): every link is checked and made again.
	other := filepath.Join(dir, "other")
	for _, d := range []string{other + "/claude/.claude", other + "/codex/.codex", other + "/gemini/.gemini"} {
		os.MkdirAll(d, 0o700)
	}
	run(other)
	links(other)
	if n := run(other); n != "1" {
		t.Errorf("the new set in place: last PID %s, want 1", n)
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
