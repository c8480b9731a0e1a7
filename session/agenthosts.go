package session

// This file is the small table of the API hosts each known agent calls, which join the
// allow-list of a broker-mode box whose default_agent runs that agent (policy/agenthosts.go
// adds them, with the origin "agent NAME"). It is one function so that the agent catalogue
// can replace it; until then it lists only the hosts an agent needs to answer, at port 443.

import "github.com/git-corral/git-corral/policy"

// agentAPIHosts maps an agent's command name to the hosts it calls.
var agentAPIHosts = map[string][]string{
	"claude": {"api.anthropic.com:443"},
	"codex":  {"api.openai.com:443", "chatgpt.com:443"},
	"gemini": {"generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443"},
}

// AgentAPIHosts returns the API hosts of the agent name (default_agent's first word, see
// policy.AgentName), or nil for an agent it does not know.
func AgentAPIHosts(name string) []string {
	return append([]string(nil), agentAPIHosts[name]...)
}

// withAgentHosts sets opts to add the running agent's API hosts in broker mode.
func withAgentHosts(opts *policy.LoadOptions) {
	if opts.AgentHosts == nil {
		opts.AgentHosts = AgentAPIHosts
	}
}
