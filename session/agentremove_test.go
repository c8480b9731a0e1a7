package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoveAgentStateNoFollow: deleting a box removes its whole agent state and seed marks,
// and each symlink a box can plant there (a state directory, a file inside one, an agent's
// whole directory, a dangling one) is unlinked, never followed: the directory it aims at on
// the host is unchanged. The control: that directory was ours to remove all along.
func TestRemoveAgentStateNoFollow(t *testing.T) {
	plants := []struct{ name, link, target string }{
		{"state directory", "claude/.claude", ""},
		{"file in a state directory", "claude/.claude/settings.json", "secret"},
		{"agent directory", "codex", ""},
		{"state file", "claude/.claude.json", "secret"},
		{"dangling", "gemini/.gemini", "gone"},
	}
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			f := newAgentFixture(t)
			if _, err := AgentMounts(f.h, "box-d", AgentStateSeeded, f.hostHome, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := PrepareAgentState(f.h, "box-d", f.claude, AgentStateSeeded, f.hostHome); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(f.h.AgentState("box-d"), p.link)
			mustDo(t, os.MkdirAll(filepath.Dir(link), 0o700))
			mustDo(t, os.RemoveAll(link))
			mustDo(t, os.Symlink(filepath.Join(f.victim, p.target), link))
			before := treeHash(t, f.victim)
			if err := RemoveAgentState(f.h, "box-d"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(f.h.AgentState("box-d")); err == nil {
				t.Error("the box's agent state is still there")
			}
			if _, err := os.Stat(seededMark(f.h, "box-d", "claude")); err == nil {
				t.Error("the seed mark is still there")
			}
			if after := treeHash(t, f.victim); after != before {
				t.Errorf("the planted symlink was followed: the host directory changed\nbefore %s\nafter  %s", before, after)
			}
			if _, err := os.Stat(f.hostHome); err != nil {
				t.Errorf("host home: %v", err)
			}
			if err := os.RemoveAll(f.victim); err != nil { // control: nothing but the rule kept it
				t.Fatalf("control: %v", err)
			}
		})
	}
}

// TestRemoveAgentStateBoxName: a box name that is not one path element is refused and
// nothing is removed; the control, a real box name, removes that box's state only.
func TestRemoveAgentStateBoxName(t *testing.T) {
	f := newAgentFixture(t)
	for _, box := range []string{"box-a", "box-b"} {
		if _, err := AgentMounts(f.h, box, AgentStateIsolated, f.hostHome, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../state", "box-a/..", "a\\b", "a\x00b"} {
		if err := RemoveAgentState(f.h, bad); err == nil || !strings.Contains(err.Error(), "not one path element") {
			t.Errorf("box %q: %v, want refused", bad, err)
		}
	}
	for _, box := range []string{"box-a", "box-b"} {
		if _, err := os.Stat(f.h.AgentState(box)); err != nil {
			t.Errorf("a refused name removed %s: %v", box, err)
		}
	}
	if err := RemoveAgentState(f.h, "box-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.h.AgentState("box-a")); err == nil {
		t.Error("control: box-a's state is still there")
	}
	if _, err := os.Stat(f.h.AgentState("box-b")); err != nil {
		t.Errorf("box-b's state went with box-a's: %v", err)
	}
}
