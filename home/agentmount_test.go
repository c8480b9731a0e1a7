package home

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckAgentMount: of $CORRAL_HOME only the agent store and this box's agent state may be
// mounted, each a real, owner-only directory reached without a symlink. Every other place of
// $CORRAL_HOME, another box's state, a narrower or wider directory, a symlink planted in the
// path and a group-writable directory are refused; the two controls pass.
func TestCheckAgentMount(t *testing.T) {
	f := newFixture(t)
	h, err := Resolve(f.getenv)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{h.AgentStore(), h.AgentState("box-a"), h.AgentState("box-b"), filepath.Join(h.AgentState("box-a"), "claude"), h.Logs()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{h.AgentStore(), h.AgentState("box-a")} {
		if err := h.CheckAgentMount(p, "box-a"); err != nil {
			t.Errorf("control %s: %v", p, err)
		}
	}
	for name, p := range map[string]string{
		"corral home":        h.Dir,
		"logs":               h.Logs(),
		"agents root":        h.Agents(),
		"state root":         h.AgentStateRoot(),
		"another box":        h.AgentState("box-b"),
		"inside state":       filepath.Join(h.AgentState("box-a"), "claude"),
		"dotdot spelling":    h.AgentState("box-a") + "/../box-b",
		"unclean store":      h.AgentStore() + "/",
		"lima home":          h.LimaHome(),
		"ssh":                filepath.Join(f.home, ".ssh"),
		"the project itself": filepath.Join(f.home, "src/proj"),
	} {
		if err := h.CheckAgentMount(p, "box-a"); !errors.Is(err, ErrAgentMount) {
			t.Errorf("%s (%s): %v, want ErrAgentMount", name, p, err)
		}
	}
	for _, box := range []string{"", ".", "..", "a/b", "a\nb"} {
		if err := h.CheckAgentMount(h.AgentState(box), box); !errors.Is(err, ErrAgentMount) {
			t.Errorf("box %q: %v, want ErrAgentMount", box, err)
		}
	}
}

// TestCheckAgentMountPlanted: a symlink or file in place of any element of the path, and a
// directory others may write, are refused.
func TestCheckAgentMountPlanted(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, h Home, f *fixture){
		"store is a symlink to ~/.ssh": func(t *testing.T, h Home, f *fixture) {
			os.MkdirAll(h.Agents(), 0o700)
			f.link(t, filepath.Join(f.home, ".ssh"), h.AgentStore())
		},
		"agents is a symlink": func(t *testing.T, h Home, f *fixture) {
			real := f.mkdir(t, filepath.Join(f.home, "dotfiles", "agents", "store"))
			_ = real
			f.link(t, filepath.Join(f.home, "dotfiles", "agents"), h.Agents())
		},
		"store is a file": func(t *testing.T, h Home, f *fixture) {
			os.MkdirAll(h.Agents(), 0o700)
			os.WriteFile(h.AgentStore(), nil, 0o600)
		},
		"store is group-writable": func(t *testing.T, h Home, f *fixture) {
			os.MkdirAll(h.AgentStore(), 0o700)
			os.Chmod(h.AgentStore(), 0o770)
		},
		"store is missing": func(t *testing.T, h Home, f *fixture) {},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			h, _ := Resolve(f.getenv)
			plant(t, h, f)
			if err := h.CheckAgentMount(h.AgentStore(), "box-a"); err == nil {
				t.Errorf("%s: accepted", name)
			}
		})
	}
}
