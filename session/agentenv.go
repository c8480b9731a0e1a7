package session

// This file picks the auth variables forwarded for the session's agent. Its rules:
//
//   - Only the session's agent's own auth variables (its catalogue AuthEnv) are forwarded by
//     default, and only those set on the host; another agent's are not.
//   - no_env_passthrough forwards none; each one set on the host is reported as not passed in.
//   - A variable an API broker route holds (api_brokers) is not forwarded: the broker adds the
//     key on the host side, so the box never holds it (authHeldByBroker).
//   - Values travel only inside the SSH channel, like every session variable; logs and the
//     audit record carry the names.

import (
	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/policy"
	"slices"
)

// agentAuthEnv returns the names of a's auth variables to forward (ok says there is a session
// agent), and a note for each one set on the host but left out. lookup reads the host
// environment; held says an api_brokers route holds the variable.
func agentAuthEnv(a agents.Agent, ok bool, cfg *policy.Config, lookup func(string) (string, bool), held func(policy.Config, string) bool) (names, dropped []string) {
	if !ok {
		return nil, nil
	}
	for _, n := range a.AuthEnv {
		if _, set := lookup(n); !set {
			continue
		}
		switch {
		case cfg.NoEnvPassthrough:
			dropped = append(dropped, n+" ("+a.Name+" auth; no_env_passthrough)")
		case held(*cfg, n):
			dropped = append(dropped, n+" ("+a.Name+" auth; held by the API broker on the host)")
		default:
			names = append(names, n)
		}
	}
	return names, dropped
}

// authHeldByBroker says whether an api_brokers route of cfg holds the host variable name (its
// value_env), so that it must not be forwarded: the broker adds it on the host instead.
func authHeldByBroker(cfg policy.Config, name string) bool {
	for _, rn := range cfg.APIBrokers {
		if r, ok := cfg.Route(rn); ok && slices.Contains(r.ValueEnv, name) {
			return true
		}
	}
	return false
}
