package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lima-vm/lima/pkg/limayaml"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// testAgents are a box's standard agent mounts under a fixed $CORRAL_HOME.
func testAgents() AgentMounts {
	return AgentMounts{Store: "/home/dev/.corral/agents/store", State: "/home/dev/.corral/agents/state/project-abcdef"}
}

// TestRenderAgentMounts: a mount-mode box mounts the agent store read-only and its own state
// writable at the fixed guest paths, after Lima fills in its defaults and passes its validator;
// the control (no agent mounts) has only the project; a clone-mode box mounts nothing even when
// agent mounts are given.
func TestRenderAgentMounts(t *testing.T) {
	for _, hostOS := range []string{HostLinux, HostDarwin} {
		o := testOptions(t, hostOS)
		o.Agents = testAgents()
		y := renderLoad(t, o)
		if len(y.Mounts) != 3 {
			t.Fatalf("%s: mounts = %+v, want project, store, state", hostOS, y.Mounts)
		}
		store, state := y.Mounts[1], y.Mounts[2]
		if store.Location != o.Agents.Store || *store.MountPoint != AgentStoreGuest || *store.Writable {
			t.Errorf("%s: store mount %+v, want %s read-only at %s", hostOS, store, o.Agents.Store, AgentStoreGuest)
		}
		if state.Location != o.Agents.State || *state.MountPoint != AgentStateGuest || !*state.Writable {
			t.Errorf("%s: state mount %+v, want %s writable at %s", hostOS, state, o.Agents.State, AgentStateGuest)
		}
		o.Agents = AgentMounts{}
		if y := renderLoad(t, o); len(y.Mounts) != 1 {
			t.Errorf("%s: without agents, mounts = %+v, want the project only", hostOS, y.Mounts)
		}
		o.Agents, o.NoProjectMount = testAgents(), true
		if y := renderLoad(t, o); len(y.Mounts) != 0 {
			t.Errorf("%s: clone mode with agents, mounts = %+v, want none", hostOS, y.Mounts)
		}
	}
}

// TestRenderAgentMountsRefused: host paths Lima would misread, and shared names leaving
// AgentSharedGuest, are refused by name; the control renders.
func TestRenderAgentMountsRefused(t *testing.T) {
	for name, a := range map[string]AgentMounts{
		"relative store":   {Store: "agents/store", State: "/s"},
		"unclean state":    {Store: "/a", State: "/s/../t"},
		"newline":          {Store: "/a\n- location: /", State: "/s"},
		"shared dotdot":    {Shared: []SharedMount{{Agent: "claude", Rel: "../../etc", Host: "/h/.claude"}}},
		"shared agent dir": {Shared: []SharedMount{{Agent: "../x", Rel: ".claude", Host: "/h/.claude"}}},
		"shared empty rel": {Shared: []SharedMount{{Agent: "claude", Rel: "", Host: "/h/.claude"}}},
	} {
		o := testOptions(t, HostLinux)
		o.Agents = a
		if _, err := Render(o); err == nil || !strings.Contains(err.Error(), "render template:") {
			t.Errorf("%s: Render = %v, want a refusal", name, err)
		}
	}
	o := testOptions(t, HostLinux)
	o.Agents = AgentMounts{Store: "/a", State: "/s", Shared: []SharedMount{{Agent: "claude", Rel: ".claude", Host: "/h/.claude"}}}
	y := renderLoad(t, o)
	if len(y.Mounts) != 4 || *y.Mounts[3].MountPoint != AgentSharedGuest+"/claude/.claude" || !*y.Mounts[3].Writable {
		t.Errorf("control: mounts = %+v", y.Mounts)
	}
}

// TestGoldenAgentDevices: a box with the standard agent mounts keeps the golden state path and
// gets a key of its own (its build box has the same devices); a box with shared agent
// directories (extra devices) does not resume a state; the build box gets empty placeholders
// of its own, never the box's store or state.
func TestGoldenAgentDevices(t *testing.T) {
	t.Setenv("CORRAL_NO_GOLDEN_STATE", "")
	r := Rendered{MountType: limayaml.NINEP}
	spec := BoxSpec{ProjectDir: "/p", Agents: testAgents()}
	if gb := spec.GoldenBox(r); !gb.State || !gb.AgentMounts {
		t.Errorf("standard agent mounts: GoldenBox = %+v, want state with agent mounts", gb)
	}
	plain := BoxSpec{ProjectDir: "/p"}
	if gb := plain.GoldenBox(r); !gb.State || gb.AgentMounts {
		t.Errorf("no agent mounts (control): GoldenBox = %+v", gb)
	}
	shared := spec
	shared.Agents.Shared = []SharedMount{{Agent: "claude", Rel: ".claude", Host: "/h/.claude"}}
	if gb := shared.GoldenBox(r); gb.State {
		t.Errorf("shared agent directories: GoldenBox = %+v, want no state (extra devices)", gb)
	}
	img := Image{Hash: "img"}
	cfg := policy.Default()
	if GoldenKey(img, cfg, provision.Bundle{}, spec.GoldenBox(r)) == GoldenKey(img, cfg, provision.Bundle{}, plain.GoldenBox(r)) {
		t.Error("boxes with and without agent mounts share a golden key")
	}
	work := t.TempDir()
	p, err := placeholderAgents(work, spec.Agents)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Standard() || !strings.HasPrefix(p.Store, work) || !strings.HasPrefix(p.State, work) {
		t.Errorf("placeholders %+v, want two directories under %s", p, work)
	}
	for _, d := range []string{p.Store, p.State} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("placeholder %s: %v %v", d, fi, err)
		}
	}
	if p, err := placeholderAgents(filepath.Join(work, "x"), AgentMounts{}); err != nil || !p.IsZero() {
		t.Errorf("no agent mounts: placeholders %+v %v, want none", p, err)
	}
}

// TestStateSealUnmountsAgents: the seal unmounts the agent mounts with the project (QEMU saves
// no VM with a mounted 9p export).
func TestStateSealUnmountsAgents(t *testing.T) {
	s := stateSealScript("0123456789abcdef", "/p", nil)
	if !strings.Contains(s.Body, `for d in "$PROJECT_DIR" `+AgentStoreGuest+` `+AgentStateGuest+`; do`) {
		t.Errorf("the seal does not unmount the agent mounts:\n%s", s.Body)
	}
}
