package session

// API broker routes in a session. Rules:
//   - api_brokers names the routes (policy checked that each exists and is complete); their
//     secrets are read from the host environment when the broker child starts and reach it
//     through a pipe (broker.StartChild), never argv, a file or the box;
//   - a host variable a route holds is never sent into the box, however the configuration
//     names it (forward_env, --env, env_from_host, git_tokens), and no box variable may carry
//     a route's secret under any name (env_file, literal env): such values are dropped, each
//     reported by name;
//   - in broker mode the box learns the route: its base_url_env is set to
//     http://NAME.api.corral and, for built-in routes, the agent's key variable to a
//     placeholder the broker replaces; outside broker mode there is no broker, so the routes
//     are not offered (a notice says so) but their variables are still withheld;
//   - a route whose host variable is unset fails the session, naming the route and variable;
//   - in broker mode each git_tokens host is a git route too (gitroutes.go), its token held
//     like a route's;
//   - a route with forge set (the built-in github and gitlab routes) gets forge_api_allow: the
//     broker refuses its merge, push, protection and GraphQL write requests unless the key
//     lists the class (broker/forge.go). A git_tokens host's API is not opened by git_tokens:
//     it is a route only when api_brokers names one. A route that carries a git_tokens token
//     (its host variable, or the same secret under another variable) without forge set fails
//     the session, so that no route with that token skips the forge rules.

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/git-corral/git-corral/boxenv"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
)

// RoutePlaceholder is the value a route's placeholder variable gets in the box: the broker
// replaces the header it arrives in with the host's credential.
const RoutePlaceholder = "corral-api-broker-holds-the-key"

// routePlan is what cfg's api_brokers mean for one session.
type routePlan struct {
	// routes are the broker's routes, credentials included.
	routes []broker.APIRoute
	// held maps each host variable a route holds to the route it is held by ("api route NAME",
	// "the broker's git route for HOST").
	held map[string]string
	// secrets are the credentials' values, for scrubbing the box's environment.
	secrets []string
}

// planRoutes resolves cfg's api_brokers with credentials read through lookup. On error the
// plan still holds every route that resolved and every variable a route holds, so that they
// are withheld even where the error does not stop the session (outside broker mode).
func planRoutes(cfg *policy.Config, lookup func(string) (string, bool)) (routePlan, error) {
	p := routePlan{held: map[string]string{}}
	var errs []error
	for _, name := range cfg.APIBrokers {
		r, ok := cfg.Route(name)
		if !ok {
			errs = append(errs, fmt.Errorf("api_brokers: no API route %q", name))
			continue
		}
		for _, v := range r.ValueEnv {
			p.held[v] = "api route " + name
		}
		secret, from := routeSecret(r.ValueEnv, lookup)
		switch {
		case from == "":
			errs = append(errs, fmt.Errorf("api route %q: %w: %s", name, boxenv.ErrUnsetHostVariable, strings.Join(r.ValueEnv, " or ")))
			continue
		case strings.ContainsAny(r.ValuePrefix+secret, "\r\n\x00"):
			errs = append(errs, fmt.Errorf("api route %q: the value of %s holds a line break or NUL", name, from))
			continue
		}
		if host := gitTokenHost(cfg, from, secret, lookup); host != "" && r.Forge == "" {
			errs = append(errs, fmt.Errorf("api route %q carries the git token of %s (%s) but has no forge rules: set forge (%s) in [api_routes.%s], or give the route another credential",
				name, host, from, strings.Join(policy.ForgeKinds, " or "), name))
			continue
		}
		p.secrets = append(p.secrets, secret)
		rt := broker.APIRoute{Name: name, Upstream: r.Upstream, Header: r.Header, Value: r.ValuePrefix + secret, Allow: r.Allow}
		if r.Forge != "" {
			rt.Forge, rt.ForgeAllow = r.Forge, cfg.ForgeAPIAllow
		}
		p.routes = append(p.routes, rt)
	}
	if cfg.Network == policy.NetworkBroker {
		errs = append(errs, p.planGitRoutes(cfg, lookup)...)
	}
	if err := errors.Join(errs...); err != nil {
		return p, hint.With(err, "set the host variable named (the secret stays on the host), or remove the route from api_brokers")
	}
	return p, nil
}

// gitTokenHost returns the git_tokens host whose token a route's secret (read from the host
// variable from) is, or "".
func gitTokenHost(cfg *policy.Config, from, secret string, lookup func(string) (string, bool)) string {
	hosts := make([]string, 0, len(cfg.GitTokens))
	for h := range cfg.GitTokens {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		v := cfg.GitTokens[h]
		if t, ok := lookup(v); v == from || (ok && t != "" && t == secret) {
			return h
		}
	}
	return ""
}

// routeBoxEnv returns the box variables that point its clients at cfg's routes: base_url_env
// set to http://NAME.api.corral, and a built-in route's key variable set to a placeholder.
func routeBoxEnv(cfg *policy.Config) map[string]string {
	env := map[string]string{}
	for _, name := range cfg.APIBrokers {
		r, ok := cfg.Route(name)
		if !ok {
			continue
		}
		if r.BaseURLEnv != "" {
			env[r.BaseURLEnv] = "http://" + name + broker.APISuffix
		}
		if r.PlaceholderEnv != "" {
			env[r.PlaceholderEnv] = RoutePlaceholder
		}
	}
	return env
}

// routeSecret returns the first non-empty value among vars and the variable it came from.
func routeSecret(vars []string, lookup func(string) (string, bool)) (string, string) {
	for _, v := range vars {
		if s, ok := lookup(v); ok && s != "" {
			return s, v
		}
	}
	return "", ""
}

// withholdSources removes from src every reference to a host variable a route holds, and
// returns what was removed, for Env.Dropped.
func (p routePlan) withholdSources(src *boxenv.Sources) []string {
	if len(p.held) == 0 {
		return nil
	}
	var dropped []string
	why := func(v string) string { return " (held on the host by " + p.held[v] + ")" }
	var fwd []string
	for _, n := range src.ForwardEnv {
		if _, ok := p.held[n]; ok {
			dropped = append(dropped, n+why(n))
			continue
		}
		fwd = append(fwd, n)
	}
	src.ForwardEnv = fwd
	src.EnvFromHost = withholdMap(src.EnvFromHost, p.held, func(k, v string) { dropped = append(dropped, k+why(v)) })
	src.GitTokens = withholdMap(src.GitTokens, p.held, func(k, v string) { dropped = append(dropped, "git token for "+k+why(v)) })
	return dropped
}

// withholdMap returns m without the entries whose value is a held variable.
func withholdMap(m, held map[string]string, drop func(k, v string)) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if _, ok := held[v]; ok {
			drop(k, v)
			continue
		}
		out[k] = v
	}
	return out
}

// scrub removes every variable whose value holds a route's secret, whatever its name.
func (p routePlan) scrub(e *boxenv.Env) {
	for _, name := range e.Names() {
		for _, s := range p.secrets {
			if strings.Contains(e.Values[name], s) {
				delete(e.Values, name)
				e.Dropped = append(e.Dropped, name+" (holds the secret of an api route)")
				break
			}
		}
	}
	sort.Strings(e.Dropped)
}

// childEnv is the broker child's environment: this process's without the variables routes
// hold, since the child takes the credentials from its pipe; nil (inherited) when none.
func (p routePlan) childEnv() []string {
	if len(p.held) == 0 {
		return nil
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := p.held[name]; !ok {
			env = append(env, kv)
		}
	}
	return env
}
