package session

// This file installs the session's agent on first use. Its rules:
//
//   - `start` whose default_agent names a catalogue agent, and any command whose first word
//     names one, gets that agent's pinned version into the store before it runs (for start,
//     before the box boots), with progress on stderr. An agent already in the store is not
//     fetched again.
//   - Installing happens on the host (package agents: fetched, verified, extracted there) and
//     reaches the box through the read-only store mount, so it never depends on the box's
//     network: offline and broker boxes get the agent too.
//   - A failed install refuses the session, naming the agent and the next command to try.

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
)

// EnsureAgentInstalled installs a's pinned version into h's store unless it is there and
// current (its launcher runs it, its files match its manifest), writing progress to progress
// (may be nil), and records that box uses it. It reports whether it installed.
func EnsureAgentInstalled(ctx context.Context, h home.Home, box string, a agents.Agent, opt agents.Options, progress io.Writer) (bool, error) {
	st := agents.Open(h.Dir, opt)
	want := st.Version(a)
	inst, found := agents.Installed{}, false
	if all, err := st.Installed(); err == nil {
		for _, i := range all {
			if i.Name == a.Name && i.Version == want && i.Problem == "" && i.Launcher != "" {
				inst, found = i, true
			}
		}
	}
	if !found {
		if progress == nil {
			progress = io.Discard
		}
		fmt.Fprintf(progress, "corral: installing agent %s %s (%s) into %s, once\n", a.Name, want, a.Package, h.AgentStore())
		var err error
		if inst, err = st.Ensure(ctx, a, want, progress); err != nil {
			return false, hint.With(fmt.Errorf("install agent %s %s: %w", a.Name, want, err),
				fmt.Sprintf("try 'git corral agents install %s' to see why, or set default_agent to a command the box has", a.Name))
		}
	}
	if err := st.RecordUse(box, inst); err != nil {
		return !found, fmt.Errorf("record agent %s of box %s: %w", a.Name, box, err)
	}
	return !found, nil
}

// ensureSessionAgent installs the agent argv's first word names, or for start default_agent's.
func (b *Box) ensureSessionAgent(ctx context.Context, argv []string) error {
	a, ok := installTarget(b.req.Cmd, argv, b.Config.DefaultAgent)
	if !ok || b.Agents.Store == "" {
		return nil
	}
	opt, err := StoreOptions(b.Config)
	if err != nil {
		return err
	}
	_, err = EnsureAgentInstalled(ctx, b.Manager.Home, b.Name, a, opt, b.req.UI.Stderr)
	return err
}

// StoreOptions are the agent store's options from cfg's trusted agent_min_age ("0s" turns the
// window off) and agent_versions pins, for the host's platform: what 'git corral agents
// install' uses, so that first use installs the same version.
func StoreOptions(cfg *policy.Config) (agents.Options, error) {
	plat, err := agents.PlatformForArch(runtime.GOARCH)
	if err != nil {
		return agents.Options{}, err
	}
	return agents.TrustedOptions(cfg.AgentMinAge, cfg.AgentVersions, plat), nil
}

// installTarget is the agent a session installs on first use: the one argv's first word
// names; with no argv, for start, default_agent's.
func installTarget(cmd string, argv []string, defaultAgent string) (agents.Agent, bool) {
	if len(argv) > 0 {
		return AgentFor(argv[:1], "")
	}
	if cmd == "start" {
		return AgentFor(nil, defaultAgent)
	}
	return agents.Agent{}, false
}
