package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-corral/git-corral/agents"
)

// kindsAgent has state names that a guess from a dot gets wrong: a directory with a dot in
// its name and a file without one.
var kindsAgent = agents.Agent{Name: "kinds", StateDirs: []string{".cfg.d", "plain"}, StateFiles: []string{".rc", ".x.json"}}

// TestAgentStateKinds: the box's state directory gets the catalogue's directories made and
// its files left for the agent to write (never made as directories, whatever their names);
// seeded copies a host path only when it is the kind the catalogue says (the controls: the
// same names of the right kind are copied).
func TestAgentStateKinds(t *testing.T) {
	cases := []struct {
		name     string
		host     map[string]bool // host path -> is a directory
		wantDirs []string
		wantFile []string
		absent   []string
	}{
		{"isolated", nil, []string{".cfg.d", "plain"}, nil, []string{".rc", ".x.json"}},
		{"seeded, kinds match", map[string]bool{".cfg.d": true, "plain": true, ".rc": false, ".x.json": false},
			[]string{".cfg.d", "plain"}, []string{".rc", ".x.json"}, nil},
		{"seeded, kinds swapped", map[string]bool{".cfg.d": false, "plain": false, ".rc": true, ".x.json": true},
			[]string{".cfg.d", "plain"}, nil, []string{".rc", ".x.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newAgentFixture(t)
			for rel, dir := range c.host {
				p := filepath.Join(f.hostHome, rel)
				if dir {
					mustDo(t, os.MkdirAll(filepath.Join(p, "sub"), 0o755))
				} else {
					mustDo(t, os.WriteFile(p, []byte("host "+rel), 0o644))
				}
			}
			mode := AgentStateIsolated
			if c.host != nil {
				mode = AgentStateSeeded
			}
			if _, err := AgentMounts(f.h, "box-k", mode, f.hostHome, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := PrepareAgentState(f.h, "box-k", kindsAgent, mode, f.hostHome); err != nil {
				t.Fatal(err)
			}
			st := filepath.Join(f.h.AgentState("box-k"), "kinds")
			for _, d := range c.wantDirs {
				if fi, err := os.Lstat(filepath.Join(st, d)); err != nil || !fi.IsDir() {
					t.Errorf("%s: want a directory (%v)", d, err)
				}
			}
			for _, p := range c.wantFile {
				if b, err := os.ReadFile(filepath.Join(st, p)); err != nil || string(b) != "host "+p {
					t.Errorf("%s: want the host's file, got %q, %v", p, b, err)
				}
			}
			for _, p := range c.absent {
				if _, err := os.Lstat(filepath.Join(st, p)); err == nil {
					t.Errorf("%s: made in the box's state, want absent (a state file is the agent's to write)", p)
				}
			}
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
