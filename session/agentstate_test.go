package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/vm"
)

// agentFixture is a host with $HOME (holding the host's own ~/.claude) and $CORRAL_HOME in a
// temporary directory, and a directory outside both that planted symlinks aim at.
type agentFixture struct {
	h                home.Home
	hostHome, victim string
	claude           agents.Agent
}

func newAgentFixture(t *testing.T) *agentFixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &agentFixture{h: home.Home{Dir: filepath.Join(root, "corral")}, hostHome: filepath.Join(root, "home"), victim: filepath.Join(root, "victim")}
	write := func(p, body string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.hostHome, ".claude/.credentials.json"), `{"token":"host-login"}`)
	write(filepath.Join(f.hostHome, ".claude/projects/p/log.jsonl"), "history\n")
	write(filepath.Join(f.hostHome, ".claude.json"), `{"user":"host"}`)
	write(filepath.Join(f.victim, "secret"), "victim\n")
	if err := os.Symlink(filepath.Join(f.victim, "secret"), filepath.Join(f.hostHome, ".claude/linked-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.victim, filepath.Join(f.hostHome, ".codex")); err != nil {
		t.Fatal(err)
	}
	if f.claude, err = agents.Lookup("claude"); err != nil {
		t.Fatal(err)
	}
	return f
}

// treeHash hashes every path, mode, link target and content under dir.
func treeHash(t *testing.T, dir string) string {
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
		line := p + " " + fi.Mode().String() + " " + fi.ModTime().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += " " + string(b)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

func mode(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// TestAgentStateLayout: the mounts are the store and this box's state, owner-only; isolated
// starts the agent's state empty (its state directory made, nothing of the host's copied), and
// the host's own agent directory is byte-identical afterwards.
func TestAgentStateLayout(t *testing.T) {
	f := newAgentFixture(t)
	before := treeHash(t, f.hostHome)
	m, err := AgentMounts(f.h, "box-a", AgentStateIsolated, f.hostHome, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Store != f.h.AgentStore() || m.State != f.h.AgentState("box-a") || len(m.Shared) != 0 {
		t.Fatalf("mounts %+v", m)
	}
	if m.Store != agents.StoreDir(f.h.Dir) {
		t.Errorf("the mounted store %s is not the agents package's store %s", m.Store, agents.StoreDir(f.h.Dir))
	}
	if sd, _ := agents.StateDir(f.h.Dir, "box-a", "claude"); sd != filepath.Join(m.State, "claude") {
		t.Errorf("the mounted state %s does not hold the agents package's state dir %s", m.State, sd)
	}
	if _, err := PrepareAgentState(f.h, "box-a", f.claude, AgentStateIsolated, f.hostHome); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{m.Store, m.State, filepath.Join(m.State, "claude"), filepath.Join(m.State, "claude/.claude")} {
		if got := mode(t, d); !got.IsDir() || got.Perm() != 0o700 {
			t.Errorf("%s: mode %v, want a 0700 directory", d, got)
		}
	}
	var found []string
	filepath.WalkDir(filepath.Join(m.State, "claude"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 0 {
		t.Errorf("isolated state holds %v, want nothing", found)
	}
	if after := treeHash(t, f.hostHome); after != before {
		t.Error("the host's home changed")
	}
}

// TestAgentStateSeeded: seeded copies the host's regular files and directories once (0600,
// 0700), never a symlink (inside or at the top), never writes the host's directory, and never
// copies again once the box has state.
func TestAgentStateSeeded(t *testing.T) {
	f := newAgentFixture(t)
	before := treeHash(t, f.hostHome)
	victim := treeHash(t, f.victim)
	if _, err := AgentMounts(f.h, "box-a", AgentStateSeeded, f.hostHome, nil); err != nil {
		t.Fatal(err)
	}
	skipped, err := PrepareAgentState(f.h, "box-a", f.claude, AgentStateSeeded, f.hostHome)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || skipped[0] != "~/.claude/linked-out" {
		t.Errorf("skipped %v, want the symlink", skipped)
	}
	st := filepath.Join(f.h.AgentState("box-a"), "claude")
	for p, want := range map[string]string{".claude/.credentials.json": `{"token":"host-login"}`, ".claude/projects/p/log.jsonl": "history\n", ".claude.json": `{"user":"host"}`} {
		b, err := os.ReadFile(filepath.Join(st, p))
		if err != nil || string(b) != want {
			t.Errorf("seeded %s = %q, %v; want %q", p, b, err, want)
		} else if m := mode(t, filepath.Join(st, p)); m.Perm() != 0o600 {
			t.Errorf("seeded %s mode %v, want 0600", p, m)
		}
	}
	if _, err := os.Lstat(filepath.Join(st, ".claude/linked-out")); err == nil {
		t.Error("a symlink of the host's directory was copied")
	}
	if m := mode(t, filepath.Join(st, ".claude/projects")); m.Perm() != 0o700 {
		t.Errorf("seeded directory mode %v, want 0700", m)
	}
	codex, _ := agents.Lookup("codex")
	skipped, err = PrepareAgentState(f.h, "box-a", codex, AgentStateSeeded, f.hostHome)
	if err != nil || len(skipped) != 1 || skipped[0] != "~/.codex" {
		t.Errorf("codex (a top-level symlink): skipped %v, %v", skipped, err)
	}
	if _, err := os.Stat(filepath.Join(f.h.AgentState("box-a"), "codex/.codex/secret")); err == nil {
		t.Error("the top-level symlink ~/.codex was followed")
	}
	if treeHash(t, f.hostHome) != before || treeHash(t, f.victim) != victim {
		t.Error("seeding changed the host's home or the symlink's target")
	}
	// Once: a new host login does not reach a box that was seeded.
	os.WriteFile(filepath.Join(f.hostHome, ".claude/.credentials.json"), []byte("new"), 0o600)
	before = treeHash(t, f.hostHome)
	os.Remove(filepath.Join(st, ".claude.json"))
	if _, err := PrepareAgentState(f.h, "box-a", f.claude, AgentStateSeeded, f.hostHome); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(st, ".claude/.credentials.json")); string(b) != `{"token":"host-login"}` {
		t.Errorf("seeded twice: %q", b)
	}
	if _, err := os.Stat(filepath.Join(st, ".claude.json")); err == nil {
		t.Error("seeded twice: .claude.json came back")
	}
	if treeHash(t, f.hostHome) != before || treeHash(t, f.victim) != victim {
		t.Error("the host's home or the symlink's target changed")
	}
}

// TestAgentStatePlanted is the table of what a box can plant in its state directory (it is
// mounted writable): symlinks and files in place of what the host makes or writes there. The
// host never follows one out of the state directory, never writes through one, and the target
// outside stays byte-identical; the control (nothing planted) seeds.
func TestAgentStatePlanted(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(st, victim string) error
		fails bool
	}{
		{"nothing planted (control)", func(st, victim string) error { return nil }, false},
		{"agent dir is a symlink out", func(st, victim string) error { return os.Symlink(victim, filepath.Join(st, "claude")) }, true},
		{"agent dir is a file", func(st, victim string) error { return os.WriteFile(filepath.Join(st, "claude"), nil, 0o600) }, true},
		{"state dir is a symlink out", func(st, victim string) error {
			os.Mkdir(filepath.Join(st, "claude"), 0o700)
			return os.Symlink(victim, filepath.Join(st, "claude/.claude"))
		}, true},
		{"state file is a symlink out", func(st, victim string) error {
			os.Mkdir(filepath.Join(st, "claude"), 0o700)
			return os.Symlink(filepath.Join(victim, "secret"), filepath.Join(st, "claude/.claude.json"))
		}, false},
		{"dot-dot symlink", func(st, victim string) error {
			return os.Symlink("../../../../victim", filepath.Join(st, "claude"))
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newAgentFixture(t)
			if _, err := AgentMounts(f.h, "box-a", AgentStateSeeded, f.hostHome, nil); err != nil {
				t.Fatal(err)
			}
			st := f.h.AgentState("box-a")
			if err := c.plant(st, f.victim); err != nil {
				t.Fatal(err)
			}
			victim, host := treeHash(t, f.victim), treeHash(t, f.hostHome)
			_, err := PrepareAgentState(f.h, "box-a", f.claude, AgentStateSeeded, f.hostHome)
			if (err != nil) != c.fails {
				t.Errorf("PrepareAgentState = %v, want failure %v", err, c.fails)
			}
			if treeHash(t, f.victim) != victim || treeHash(t, f.hostHome) != host {
				t.Error("a file outside the state directory changed")
			}
			if !c.fails {
				if b, err := os.ReadFile(filepath.Join(st, "claude/.claude/.credentials.json")); err != nil || string(b) != `{"token":"host-login"}` {
					t.Errorf("seeded credentials = %q, %v", b, err)
				}
			}
			if err := LogoutAgent(f.h, "box-a", "claude"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(st, "claude")); err == nil {
				t.Error("logout left the agent's state")
			}
			if treeHash(t, f.victim) != victim {
				t.Error("logout changed the symlink's target")
			}
		})
	}
}

// TestLogoutAgent: logout removes this box's login of that agent only; another agent's and
// another box's stay; an unknown agent is refused by name.
func TestLogoutAgent(t *testing.T) {
	f := newAgentFixture(t)
	codex, _ := agents.Lookup("codex")
	for _, box := range []string{"box-a", "box-b"} {
		if _, err := AgentMounts(f.h, box, AgentStateSeeded, f.hostHome, nil); err != nil {
			t.Fatal(err)
		}
		for _, a := range []agents.Agent{f.claude, codex} {
			if _, err := PrepareAgentState(f.h, box, a, AgentStateSeeded, f.hostHome); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := LogoutAgent(f.h, "box-a", "claude"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.h.AgentState("box-a"), "claude")); err == nil {
		t.Error("box-a's claude state is still there")
	}
	for _, p := range []string{"box-a/codex", "box-b/claude/.claude/.credentials.json"} {
		if _, err := os.Stat(filepath.Join(f.h.AgentStateRoot(), p)); err != nil {
			t.Errorf("%s: %v, want kept", p, err)
		}
	}
	if err := LogoutAgent(f.h, "box-a", "../box-b"); err == nil || !strings.Contains(err.Error(), "not in the catalogue") {
		t.Errorf("logout of an unknown agent: %v", err)
	}
	if err := RemoveAgentState(f.h, "box-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.h.AgentState("box-b")); err == nil {
		t.Error("RemoveAgentState left box-b's state")
	}
}

// TestAgentMountsShared: shared mounts the host's existing agent directories (never a file,
// which Lima cannot mount), each through the mount guard: a ~/.claude that is a symlink to
// ~/.ssh is refused; isolated and seeded (the controls) mount none of them. The guest paths
// are the agents package's.
func TestAgentMountsShared(t *testing.T) {
	if vm.AgentStoreGuest != agents.BoxMount || vm.AgentBinGuest != agents.BoxBinDir {
		t.Fatalf("guest store %s / %s, the agents package says %s / %s", vm.AgentStoreGuest, vm.AgentBinGuest, agents.BoxMount, agents.BoxBinDir)
	}
	f := newAgentFixture(t)
	getenv := func(k string) string { return map[string]string{"HOME": f.hostHome, home.Env: f.h.Dir}[k] }
	for _, mode := range []string{AgentStateIsolated, AgentStateSeeded} {
		if m, err := AgentMounts(f.h, "box-a", mode, f.hostHome, getenv); err != nil || len(m.Shared) != 0 {
			t.Errorf("%s: shared mounts %+v, %v; want none", mode, m.Shared, err)
		}
	}
	// A symlinked agent directory is the target of a hidden symlink in $HOME: the mount guard
	// refuses it, as it would a `mounts` entry.
	if _, err := AgentMounts(f.h, "box-a", AgentStateShared, f.hostHome, getenv); !errors.Is(err, home.ErrHostPath) {
		t.Errorf("shared ~/.codex (a symlink): %v, want the mount guard's refusal", err)
	}
	os.Remove(filepath.Join(f.hostHome, ".codex"))
	os.Mkdir(filepath.Join(f.hostHome, ".codex"), 0o700)
	m, err := AgentMounts(f.h, "box-a", AgentStateShared, f.hostHome, getenv)
	if err != nil {
		t.Fatal(err)
	}
	// ~/.claude.json is a file: not mounted.
	var got []string
	for _, s := range m.Shared {
		got = append(got, s.Agent+":"+s.Rel)
	}
	if strings.Join(got, ",") != "claude:.claude,codex:.codex" {
		t.Errorf("shared %q, want claude's and codex's directories only", got)
	}
	os.MkdirAll(filepath.Join(f.hostHome, ".ssh"), 0o700)
	os.RemoveAll(filepath.Join(f.hostHome, ".claude"))
	os.Symlink(filepath.Join(f.hostHome, ".ssh"), filepath.Join(f.hostHome, ".claude"))
	if _, err := AgentMounts(f.h, "box-a", AgentStateShared, f.hostHome, getenv); !errors.Is(err, home.ErrHostPath) {
		t.Errorf("shared ~/.claude -> ~/.ssh: %v, want the mount guard's refusal", err)
	}
}
