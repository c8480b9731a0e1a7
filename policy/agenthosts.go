package policy

// This file lets the running agent reach its own API in broker mode. Rules:
//   - only in broker mode (full mode reaches everything, offline nothing);
//   - the agent is default_agent's first word, after any directory ("/usr/bin/claude -p" is
//     claude); its hosts come from LoadOptions.AgentHosts (the agent catalogue), never from the
//     repository: the repository chooses the agent, the trusted catalogue says what it may reach;
//   - each host joins egress once, with the origin "agent NAME", so `git corral config` shows
//     why it is there; a host a trusted layer already allows keeps that layer's origin.

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// AgentName returns the agent a default_agent command runs: its first word without directory.
func AgentName(defaultAgent string) string {
	f := strings.Fields(defaultAgent)
	if len(f) == 0 {
		return ""
	}
	return path.Base(f[0])
}

// agentHosts adds the agent's API hosts to egress in broker mode.
func (l *loader) agentHosts() {
	c := l.eff.Config
	if l.opts.AgentHosts == nil || c.Network != NetworkBroker {
		return
	}
	agent := AgentName(c.DefaultAgent)
	if agent == "" {
		return
	}
	for _, h := range l.opts.AgentHosts(agent) {
		if checkEgress(h) != "" || slices.Contains(c.Egress, h) {
			continue
		}
		l.eff.Origins[fmt.Sprintf("egress[%d]", len(c.Egress))] = Origin{Layer: LayerAgent, Name: agent}
		c.Egress = append(c.Egress, h)
	}
}
