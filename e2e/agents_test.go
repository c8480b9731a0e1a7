package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/agents"
)

// agentsFakeKey is the ANTHROPIC_API_KEY the host hands the claude sessions; it must reach the
// agent's environment in the box and nothing else.
const agentsFakeKey = "sk-ant-corral-e2e-fake-0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// agentsStateMarker is what the agent "writes" into its state directory in the box.
const agentsStateMarker = "corral-e2e-agent-login-7c2f"

// hashDir hashes every path, mode, link target and content under dir ("" when it is absent).
func hashDir(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := strings.TrimPrefix(p, dir) + " " + fi.Mode().String() + " " + fi.ModTime().UTC().String()
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			line += " -> " + target
		} else if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatalf("hash %s: %v", dir, err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// TestAgents is issue #23's agents in the box on two boxes: a broker-mode box runs the agents
// the host installed into the read-only store (claude through default_agent with `start`,
// codex by name), keeps claude's isolated state on the host across stop/start, gets claude's
// auth variable in its environment and nowhere else, and loses the state with `agents
// logout`; an offline box runs the installed agent without any network and does not see the
// first box's state. The host's own ~/.claude is byte-identical before and after.
func TestAgents(t *testing.T) {
	group(t)
	claude, err := agents.Lookup("claude")
	if err != nil {
		t.Fatal(err)
	}
	codex, err := agents.Lookup("codex")
	if err != nil {
		t.Fatal(err)
	}
	// The host's own agent directory ($HOME is the suite's home): it must never be read into
	// an isolated box, nor written.
	hostClaude := filepath.Join(suite.home, ".claude")
	writeFile(t, filepath.Join(hostClaude, ".credentials.json"), `{"host":"login-never-in-a-box"}`, 0o600)
	if err := chown(hostClaude); err != nil {
		t.Fatal(err)
	}
	hostBefore := hashDir(t, hostClaude)
	t.Cleanup(func() {
		if hashDir(t, hostClaude) != hostBefore {
			t.Error("the host's own ~/.claude changed")
		}
		os.RemoveAll(hostClaude)
	})

	for _, a := range []string{"claude", "codex"} {
		if r := corral(t, suite.home, nil, "agents", "install", a); r.code != 0 {
			t.Fatalf("agents install %s: exit %d: %s", a, r.code, r.stderr)
		}
	}

	dir := newProject(t, "agents-broker")
	box := boxName(t, dir)
	cleanupBox(t, box)
	writeProjectConfig(t, box, "network = \"broker\"\ndefault_agent = \"claude --version\"\nagent_state = \"isolated\"\n")
	// Every host process from here on is watched for the key on its argv.
	scan := watchArgv(t, agentsFakeKey)
	setGroupEnv(t, "ANTHROPIC_API_KEY="+agentsFakeKey, "OPENAI_API_KEY=sk-openai-not-for-a-claude-session")
	stateFile := filepath.Join(suite.home, "agents", "state", box, "claude", ".claude", "corral-e2e-state")

	t.Run("start runs default_agent from the store: the pinned claude", func(t *testing.T) {
		r := corral(t, dir, nil, "start", "--yes")
		if r.code != 0 || !strings.Contains(r.stdout, claude.DefaultVersion) {
			t.Fatalf("exit %d, stdout %q: want claude %s", r.code, r.stdout, claude.DefaultVersion)
		}
	})
	t.Run("codex runs by name, its pinned version", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "codex", "--version")
		if r.code != 0 || !strings.Contains(r.stdout, codex.DefaultVersion) {
			t.Fatalf("exit %d, stdout %q: want codex %s", r.code, r.stdout, codex.DefaultVersion)
		}
	})
	t.Run("the store is read-only in the box; the state mount (control) is writable", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "sh", "-c",
			"touch /opt/corral/agents/bin/planted 2>/dev/null && echo STORE-WRITABLE; "+
				"touch /var/lib/corral/agent-state/control && echo STATE-WRITABLE && rm -f /var/lib/corral/agent-state/control")
		if strings.Contains(r.stdout, "STORE-WRITABLE") || !strings.Contains(r.stdout, "STATE-WRITABLE") {
			t.Fatalf("stdout %q: want the store refused and the state mount (control) writable", r.stdout)
		}
		if _, err := os.Lstat(filepath.Join(suite.home, "agents", "store", "bin", "planted")); err == nil {
			t.Error("a file planted in the box is in the host's agent store")
		}
	})
	t.Run("the agent's key is in its environment, in no argv, log or file under CORRAL_HOME", func(t *testing.T) {
		done := make(chan result, 1)
		go func() { done <- corral(t, dir, nil, "run", "--", "sh", "-c", "env") }()
		r := <-done
		leaks := scan.stop(t)
		if !strings.Contains(r.stdout, "ANTHROPIC_API_KEY="+agentsFakeKey+"\n") {
			t.Errorf("exit %d: ANTHROPIC_API_KEY is not in the claude session's environment", r.code)
		}
		if strings.Contains(r.stdout, "OPENAI_API_KEY") {
			t.Error("codex's key reached a claude session")
		}
		if len(leaks) > 0 {
			t.Errorf("the key is on a host argv: %v", leaks)
		}
		if hits := grepTree(suite.home, agentsFakeKey); len(hits) > 0 {
			t.Errorf("the key is in files under CORRAL_HOME: %v", hits)
		}
		if strings.Contains(r.stderr, agentsFakeKey) {
			t.Error("the key is in git corral's own output")
		}
	})
	t.Run("isolated: the box starts without the host's login, and what it writes is kept on the host", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "sh", "-c",
			"grep -rqs login-never-in-a-box ~/.claude ~/.claude.json && echo HOST-LOGIN; echo "+agentsStateMarker+" > ~/.claude/corral-e2e-state && echo WROTE")
		if strings.Contains(r.stdout, "HOST-LOGIN") || !strings.Contains(r.stdout, "WROTE") {
			t.Fatalf("stdout %q: want no host login, and the write to succeed", r.stdout)
		}
		b, err := os.ReadFile(stateFile)
		if err != nil || !strings.Contains(string(b), agentsStateMarker) {
			t.Fatalf("host state file %s: %q, %v", stateFile, b, err)
		}
		if fi, err := os.Stat(filepath.Dir(stateFile)); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("host state dir: %v %v, want owner-only", fi, err)
		}
	})
	t.Run("the state survives stop and start", func(t *testing.T) {
		if r := corral(t, dir, nil, "stop"); r.code != 0 {
			t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
		}
		r := corral(t, dir, nil, "run", "--", "sh", "-c", "cat ~/.claude/corral-e2e-state")
		if r.code != 0 || !strings.Contains(r.stdout, agentsStateMarker) {
			t.Fatalf("exit %d, stdout %q: the agent's state did not survive stop/start", r.code, r.stdout)
		}
	})

	offDir := newProject(t, "agents-offline")
	offBox := boxName(t, offDir)
	cleanupBox(t, offBox)
	writeProjectConfig(t, offBox, "network = \"offline\"\ndefault_agent = \"claude --version\"\nagent_state = \"isolated\"\n")
	t.Run("offline: the installed agent runs without any network", func(t *testing.T) {
		r := corral(t, offDir, nil, "start", "--yes")
		if r.code != 0 || !strings.Contains(r.stdout, claude.DefaultVersion) {
			t.Fatalf("exit %d, stdout %q: want claude %s in an offline box", r.code, r.stdout, claude.DefaultVersion)
		}
	})
	t.Run("a second box does not see the first box's state", func(t *testing.T) {
		r := corral(t, offDir, nil, "run", "--", "sh", "-c", "cat ~/.claude/corral-e2e-state 2>/dev/null; ls /var/lib/corral/agent-state/claude/.claude; echo END")
		if strings.Contains(r.stdout, agentsStateMarker) || strings.Contains(r.stdout, "corral-e2e-state") || !strings.Contains(r.stdout, "END") {
			t.Fatalf("exit %d, stdout %q: the offline box sees the broker box's agent state", r.code, r.stdout)
		}
	})
	if r := corral(t, offDir, nil, "stop"); r.code != 0 {
		t.Logf("stop the offline box: exit %d", r.code)
	}

	t.Run("agents logout removes the box's login, on the host and in the box", func(t *testing.T) {
		if r := corral(t, dir, nil, "agents", "logout", "claude"); r.code != 0 {
			t.Fatalf("agents logout claude: exit %d: %s", r.code, r.stderr)
		}
		if _, err := os.Stat(stateFile); err == nil {
			t.Fatalf("%s is still on the host after logout", stateFile)
		}
		r := corral(t, dir, nil, "run", "--", "sh", "-c", "cat ~/.claude/corral-e2e-state 2>/dev/null; echo END")
		if strings.Contains(r.stdout, agentsStateMarker) || !strings.Contains(r.stdout, "END") {
			t.Fatalf("stdout %q: the box still has the login after logout", r.stdout)
		}
	})
}
