package vm

// This file renders the agent mounts, part of every mount-mode box's standard mount set. Rules:
//
//   - The agent store ($CORRAL_HOME/agents/store) is mounted READ-ONLY at AgentStoreGuest: a
//     Lima mount with writable false, which QEMU enforces on the 9p export, so neither the box
//     user nor root in a full-mode box can replace an agent the host installed. It needs no
//     network, so offline and broker boxes get the agents too, and nothing is copied per box.
//   - The box's agent state ($CORRAL_HOME/agents/state/BOX) is mounted writable at
//     AgentStateGuest: what an agent writes into its state directories (a login, history) is
//     kept on the host across stop/start and deletion of the box's disk, and no other box sees it.
//   - agent_state = "shared" adds one writable mount per host agent directory at
//     AgentSharedGuest/AGENT/REL (trusted layers only may choose it; the policy says so). Those
//     are extra devices, so a box with them never resumes a golden state.
//   - The host side of each is product-made; the session checks it (home.CheckAgentMount)
//     before it reaches here. Guest paths are fixed constants, never taken from configuration.

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/lima-vm/lima/pkg/limayaml"
)

// Guest paths of the agent mounts.
const (
	// AgentStoreGuest is where the read-only agent store is mounted; AgentBinGuest holds its
	// launchers and is put on the session's PATH.
	AgentStoreGuest = "/opt/corral/agents"
	AgentBinGuest   = AgentStoreGuest + "/bin"
	// AgentStateGuest is where the box's own agent state is mounted, one directory per agent.
	AgentStateGuest = "/var/lib/corral/agent-state"
	// AgentSharedGuest holds the host's own agent directories with agent_state = "shared".
	AgentSharedGuest = "/var/lib/corral/agent-shared"
)

// AgentMounts are the host sides of a box's agent mounts. The zero value mounts nothing.
type AgentMounts struct {
	// Store is the host's agent store, mounted read-only at AgentStoreGuest.
	Store string
	// State is the box's agent state directory, mounted writable at AgentStateGuest.
	State string
	// Shared are host agent directories mounted writable (agent_state = "shared").
	Shared []SharedMount
}

// SharedMount is one host agent directory mounted with agent_state = "shared".
type SharedMount struct {
	// Agent is the catalogue name; Rel the directory relative to the home (".claude").
	Agent, Rel string
	// Host is the host directory.
	Host string
}

// Guest is where m is mounted in the box.
func (m SharedMount) Guest() string { return path.Join(AgentSharedGuest, m.Agent, m.Rel) }

// IsZero reports whether a mounts nothing.
func (a AgentMounts) IsZero() bool { return a.Store == "" && a.State == "" && len(a.Shared) == 0 }

// Standard reports whether a is the standard set (store and state, nothing shared): the device
// set of a golden build box.
func (a AgentMounts) Standard() bool { return a.Store != "" && a.State != "" && len(a.Shared) == 0 }

// limaMounts are a's Lima mounts, the store first.
func (a AgentMounts) limaMounts() []limayaml.Mount {
	var out []limayaml.Mount
	if a.Store != "" {
		out = append(out, limayaml.Mount{Location: a.Store, MountPoint: ptr(AgentStoreGuest), Writable: ptr(false)})
	}
	if a.State != "" {
		out = append(out, limayaml.Mount{Location: a.State, MountPoint: ptr(AgentStateGuest), Writable: ptr(true)})
	}
	for _, s := range a.Shared {
		out = append(out, limayaml.Mount{Location: s.Host, MountPoint: ptr(s.Guest()), Writable: ptr(true)})
	}
	return out
}

// check refuses host paths that are not absolute and clean or hold a newline or NUL, and
// shared names that would leave AgentSharedGuest.
func (a AgentMounts) check() []error {
	var errs []error
	hostPath := func(what, p string) {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsAny(p, "\x00\n\r") {
			errs = append(errs, fmt.Errorf("render template: %s %q must be absolute and clean, without newline or NUL", what, p))
		}
	}
	if a.Store != "" {
		hostPath("agent store", a.Store)
	}
	if a.State != "" {
		hostPath("agent state", a.State)
	}
	for _, s := range a.Shared {
		hostPath("shared agent directory", s.Host)
		g := s.Guest()
		if s.Agent == "" || s.Rel == "" || !strings.HasPrefix(g, AgentSharedGuest+"/"+s.Agent+"/") ||
			strings.ContainsAny(s.Agent+s.Rel, "\x00\n\r") || path.Clean(s.Agent) != s.Agent || strings.Contains(s.Agent, "/") {
			errs = append(errs, fmt.Errorf("render template: shared agent directory %q of %q leaves %s", s.Rel, s.Agent, AgentSharedGuest))
		}
	}
	return errs
}

// standardDevices reports whether a box with agent mounts a has a golden build box's devices:
// the standard set, or none (a box rendered before the agent mounts).
func standardDevices(a AgentMounts) bool { return a.IsZero() || a.Standard() }

// placeholderAgents is the golden build box's agent mounts for a box with a: empty directories
// of its own under work in place of the store and state, so that its devices are the box's
// (golden_state.go); the build box sees no agent and no state of anyone's.
func placeholderAgents(work string, a AgentMounts) (AgentMounts, error) {
	if !a.Standard() {
		return AgentMounts{}, nil
	}
	p := AgentMounts{Store: filepath.Join(work, "agent-store"), State: filepath.Join(work, "agent-state")}
	for _, d := range []string{p.Store, p.State} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return AgentMounts{}, fmt.Errorf("golden build box: %w", err)
		}
	}
	return p, nil
}
