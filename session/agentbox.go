package session

// This file is the session flow's agent steps, in order: Open makes the agent mounts (the
// store read-only, the box's state writable; agentstate.go) and, for start, installs
// default_agent's agent before the box boots (agentinstall.go); Run prepares the session
// agent's state, installs an agent the command names, forwards that agent's auth variables
// (agentenv.go) and launches the command after the prelude that links the state and puts the
// store on PATH (agentlaunch.go). Clone-mode boxes mount nothing of the host, so agents are
// mount-mode only for now (SECURITY.md says why).

import (
	"context"
	"os"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// hostHome is the host user's home: $HOME, else the account's.
func (b *Box) hostHome() string {
	if h := b.req.getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// openAgents makes b's agent mounts and, for start, installs default_agent's agent.
func (b *Box) openAgents(ctx context.Context) error {
	m, err := AgentMounts(b.Manager.Home, b.Name, b.Config.AgentState, b.hostHome(), b.req.Getenv)
	if err != nil {
		return hint.With(err, "fix or remove that directory of $CORRAL_HOME/agents, then start again")
	}
	b.Agents = m
	if b.req.Cmd == "start" {
		return b.ensureSessionAgent(ctx, nil)
	}
	return nil
}

// agentSession readies a session of argv in b: the command's agent installed, the session
// agent's state prepared (seeded the first time when agent_state says so; every other agent's
// state directory made empty), and the prelude that links it. It returns the prelude to run
// before argv and the host variables to forward for the agent. A box without agent mounts
// has no prelude.
func (b *Box) agentSession(ctx context.Context, argv []string) (vm.Prelude, []string, error) {
	a, ok := AgentFor(argv, b.Config.DefaultAgent)
	held := authHeldByBroker
	if lg, err := b.login(); err == nil && lg != nil && ok && lg.agent == a.Name && b.BrokerSecret != nil {
		held = func(policy.Config, string) bool { return true } // the host-held login replaces them
	}
	auth, dropped := agentAuthEnv(a, ok, b.Config, os.LookupEnv, held)
	for _, d := range dropped {
		b.req.notice("not passed into the box: " + d)
	}
	if b.Agents.State == "" {
		return vm.Prelude{}, auth, nil
	}
	if err := b.ensureSessionAgent(ctx, argv); err != nil {
		return vm.Prelude{}, nil, err
	}
	if b.Config.AgentState == AgentStateShared { // the host's directories are mounted instead
		p, err := agentLinks(vm.AgentSharedGuest, agents.Catalogue())
		return p, auth, err
	}
	var linked []agents.Agent
	for _, c := range agents.Catalogue() {
		mode := b.Config.AgentState
		if mode == AgentStateSeeded && (!ok || c.Name != a.Name) {
			mode = AgentStateIsolated // only the session's agent is seeded
		}
		skipped, err := PrepareAgentState(b.Manager.Home, b.Name, c, mode, b.hostHome())
		if err != nil {
			return vm.Prelude{}, nil, hint.With(err, "'git corral agents logout "+c.Name+"' empties that agent's state in this box")
		}
		for _, s := range skipped {
			b.req.notice("agent_state = \"seeded\": " + s + " is not a regular file or directory; not copied into the box")
		}
		linked = append(linked, c)
	}
	p, err := agentLinks(vm.AgentStateGuest, linked)
	return p, auth, err
}
