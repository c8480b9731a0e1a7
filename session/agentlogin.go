package session

// This file gives the session's agent a host-held subscription login (package login) in broker
// mode. Rules:
//   - agent_login (trusted-only) names the login; empty means the login named after the agent
//     when there is one, "none" means none; a named login that is missing, unreadable or made
//     for another agent stops the session, naming it;
//   - only agents that can send their subscription credential through a base-URL setting have a
//     login route (loginRoutes; docs/AGENT-LOGINS.md says why the others cannot);
//   - the login route is the agent's built-in API route (its upstream and allow patterns, as
//     [api_routes.NAME] may change them) with the login's token in place of an API key: the
//     broker child gets only the login file's name, reads the token at every request and
//     refreshes it under the login's lock, shared with every other box's broker;
//   - the box gets the route's URL and a placeholder in the agent's token variable, never the
//     token; the agent's own auth variables from the host are not forwarded while a login is in
//     use (they would replace it);
//   - api_brokers may not name the same route: one route, one credential;
//   - outside broker mode there is no broker: the login is not offered (a notice says so), and
//     nothing of it reaches the box.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/login"
	"github.com/git-corral/git-corral/policy"
)

// LoginPlaceholder is what the agent's token variable holds in the box while a host-held login
// is in use: the broker replaces the header it arrives in.
const LoginPlaceholder = "corral-host-held-login"

// loginRoute says how an agent's subscription login goes through the broker.
type loginRoute struct {
	// route is the built-in API route whose upstream and patterns it uses.
	route string
	// header and prefix carry the token ("Authorization", "Bearer ").
	header, prefix string
	// tokenEnv is the agent's variable for a subscription token; the box gets the placeholder.
	tokenEnv string
}

// loginRoutes are the agents that can use a host-held login.
var loginRoutes = map[string]loginRoute{
	// Claude Code sends CLAUDE_CODE_OAUTH_TOKEN as "Authorization: Bearer" with its OAuth beta
	// header, to ANTHROPIC_BASE_URL.
	"claude": {route: "anthropic", header: "Authorization", prefix: "Bearer ", tokenEnv: "CLAUDE_CODE_OAUTH_TOKEN"},
}

// sessionLogin is the host-held login a session of cfg uses.
type sessionLogin struct {
	agent, name, file string
	how               loginRoute
}

// planLogin resolves cfg's agent_login for its default agent in the store of corralHome; nil
// when the session uses none.
func planLogin(cfg *policy.Config, corralHome string) (*sessionLogin, error) {
	agent := policy.AgentName(cfg.DefaultAgent)
	if cfg.AgentLogin == "none" {
		return nil, nil
	}
	if _, err := agents.Lookup(agent); err != nil {
		if cfg.AgentLogin != "" {
			return nil, hint.With(fmt.Errorf("agent_login = %q: default_agent %q runs no catalogue agent", cfg.AgentLogin, cfg.DefaultAgent),
				"set default_agent to one of "+fmt.Sprint(agents.Names())+", or remove agent_login")
		}
		return nil, nil
	}
	name := cfg.AgentLogin
	if name == "" {
		name = agent
	}
	rec, err := login.Load(corralHome, name)
	switch {
	case errors.Is(err, login.ErrNoLogin) && cfg.AgentLogin == "":
		return nil, nil
	case err != nil:
		return nil, hint.With(fmt.Errorf("agent_login = %q: %w", name, err), "run 'git corral agents login "+agent+" --as "+name+"', or change agent_login in the trusted configuration")
	case rec.Agent != agent:
		return nil, hint.With(fmt.Errorf("agent_login = %q: the login is for %s, the session's agent is %s", name, rec.Agent, agent),
			"name a login made with 'git corral agents login "+agent+"' ('git corral agents logins' lists them)")
	}
	how, ok := loginRoutes[agent]
	if !ok {
		return nil, hint.With(fmt.Errorf("host-held login %q: %s cannot use a login held on the host", name, agent),
			"see docs/AGENT-LOGINS.md for why; use an API key route (api_brokers) or set agent_login = \"none\"")
	}
	if slices.Contains(cfg.APIBrokers, how.route) {
		return nil, hint.With(fmt.Errorf("host-held login %q and api_brokers both use the route %q", name, how.route),
			"remove "+how.route+" from api_brokers to use the login, or set agent_login = \"none\" to use the API key")
	}
	return &sessionLogin{agent: agent, name: name, file: login.Path(corralHome, name), how: how}, nil
}

// brokerRoute is the broker's route for the login.
func (l *sessionLogin) brokerRoute(cfg *policy.Config) broker.APIRoute {
	r, _ := cfg.Route(l.how.route)
	return broker.APIRoute{Name: l.how.route, Upstream: r.Upstream, Header: l.how.header, Value: l.how.prefix,
		Login: l.file, Allow: r.Allow}
}

// boxEnv is what the box gets for the login: the route's URL and the placeholder.
func (l *sessionLogin) boxEnv(cfg *policy.Config) map[string]string {
	r, _ := cfg.Route(l.how.route)
	env := map[string]string{l.how.tokenEnv: LoginPlaceholder}
	if r.BaseURLEnv != "" {
		env[r.BaseURLEnv] = "http://" + l.how.route + broker.APISuffix
	}
	return env
}

// login is the host-held login of a session in b (planLogin); none for a box without a manager
// (tests that build a Box by hand).
func (b *Box) login() (*sessionLogin, error) {
	if b.Manager == nil || b.Manager.Home.Dir == "" {
		return nil, nil
	}
	return planLogin(b.Config, b.Manager.Home.Dir)
}
