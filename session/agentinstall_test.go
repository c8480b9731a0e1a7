package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
)

// TestInstallTarget: start installs default_agent's agent; a command whose first word names an
// agent installs that one; other commands install nothing.
func TestInstallTarget(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		argv []string
		def  string
		want string
	}{
		{"start", nil, "claude --version", "claude"},
		{"start", []string{"codex"}, "claude", "codex"},
		{"run", []string{"gemini", "-p", "x"}, "", "gemini"},
		{"run", []string{"env"}, "claude", ""},
		{"shell", nil, "claude", ""},
		{"start", nil, "", ""},
		{"start", nil, "vim", ""},
	} {
		a, ok := installTarget(c.cmd, c.argv, c.def)
		if ok != (c.want != "") || a.Name != c.want {
			t.Errorf("installTarget(%s, %q, %q) = %q %v, want %q", c.cmd, c.argv, c.def, a.Name, ok, c.want)
		}
	}
}

// TestEnsureAgentInstalledFetches: an agent the store lacks is fetched through the host's npm
// (a fake on PATH here, which refuses), with a progress line first; the failure names the agent
// and the next command, and nothing is recorded as installed.
func TestEnsureAgentInstalledFetches(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "npm.log")
	npm := "#!/bin/sh\necho \"$*\" >>" + log + "\necho 'npm error 404' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "npm"), []byte(npm), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	h := home.Home{Dir: filepath.Join(dir, "corral")}
	a, _ := AgentFor([]string{"claude"}, "")
	var progress strings.Builder
	opt, err := StoreOptions(policy.Default())
	if err != nil {
		t.Fatal(err)
	}
	installed, err := EnsureAgentInstalled(context.Background(), h, "box-a", a, opt, &progress)
	if err == nil || installed || !strings.Contains(err.Error(), "install agent claude") || !strings.Contains(hint.Of(err), "git corral agents install claude") {
		t.Fatalf("EnsureAgentInstalled = %v, %v (hint %q), want a refusal naming claude", installed, err, hint.Of(err))
	}
	if !strings.HasPrefix(progress.String(), "corral: installing agent claude "+a.DefaultVersion) {
		t.Errorf("progress %q", progress.String())
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "@anthropic-ai/claude-code") {
		t.Errorf("npm was not asked for the package: %q", b)
	}
}
