package session

// Git routes in a session. Rules:
//   - in broker mode each git_tokens host is a git route of the broker (broker/git.go): the
//     token is read from the host variable when the broker child starts and reaches it through
//     the routes pipe, like an API route's secret; the broker adds it, as git's
//     "x-access-token" basic credential, to the box's git requests to that host once they pass
//     the push rules (git_push as the trusted layers set it and the repository narrowed it,
//     git_push_delete, git_push_force);
//   - the token never enters the box in broker mode: its variable is held like a route's (no
//     CORRAL_GIT_TOKEN_<n>, no credential helper), and an unset one fails the session;
//   - the box's git reaches the route by url.insteadOf, set for the session through git's
//     GIT_CONFIG_COUNT variables (after any the configuration itself set), so that an ordinary
//     "git clone https://HOST/…" goes to http://HOST.git.corral/… through the broker;
//   - outside broker mode nothing changes: git_tokens hands the token to the box's credential
//     helper, and nothing filters pushes.

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/git-corral/git-corral/boxenv"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/policy"
)

// gitRouteUser is the user name the token is sent under, as the box's credential helper does.
const gitRouteUser = "x-access-token"

// planGitRoutes adds a git route for each git_tokens host to p, holding its variable.
func (p *routePlan) planGitRoutes(cfg *policy.Config, lookup func(string) (string, bool)) []error {
	var errs []error
	hosts := make([]string, 0, len(cfg.GitTokens))
	for h := range cfg.GitTokens {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	rules := broker.GitRules{Push: cfg.GitPush.Trusted, Narrowed: cfg.GitPush.Narrowed, Narrow: cfg.GitPush.Narrow,
		Delete: cfg.GitPushDelete, Force: cfg.GitPushForce}
	for _, host := range hosts {
		v := cfg.GitTokens[host]
		p.held[v] = "the broker's git route for " + host
		if err := boxenv.CheckHost(host); err != nil {
			errs = append(errs, fmt.Errorf("git_tokens: %w", err))
			continue
		}
		token, ok := lookup(v)
		switch {
		case !ok || token == "":
			errs = append(errs, fmt.Errorf("git_tokens %q = %s: %w: %s", host, v, boxenv.ErrUnsetHostVariable, v))
			continue
		case strings.ContainsAny(token, "\r\n\x00"):
			errs = append(errs, fmt.Errorf("git_tokens %q: the token in %s holds a line break or NUL", host, v))
			continue
		}
		p.secrets = append(p.secrets, token)
		r := rules
		p.routes = append(p.routes, broker.APIRoute{Name: host, Upstream: "https://" + host, Header: "Authorization",
			Value: "Basic " + base64.StdEncoding.EncodeToString([]byte(gitRouteUser+":"+token)), Git: &r})
	}
	return errs
}

// gitCredentialHelper reports whether the box gets the git credential helper that offers
// git_tokens to its git: outside broker mode only, since in broker mode no token is in the box.
func gitCredentialHelper(cfg *policy.Config) bool {
	return len(cfg.GitTokens) > 0 && cfg.Network != policy.NetworkBroker
}

// gitRouteURL is where the box's git reaches a git_tokens host through the broker.
func gitRouteURL(host string) string {
	name, port, _ := strings.Cut(host, ":")
	if port != "" && port != "443" {
		return "http://" + name + broker.GitSuffix + ":" + port + "/"
	}
	return "http://" + name + broker.GitSuffix + "/"
}

// gitRouteEnv adds to env, in broker mode, the git configuration that sends https://HOST/ of
// every git_tokens host to its git route: url.<route>.insteadOf entries as GIT_CONFIG_KEY_<n>
// and GIT_CONFIG_VALUE_<n>, numbered after the ones env already holds.
func gitRouteEnv(cfg *policy.Config, env map[string]string) {
	if cfg.Network != policy.NetworkBroker || len(cfg.GitTokens) == 0 {
		return
	}
	n := 0
	if s, ok := env["GIT_CONFIG_COUNT"]; ok {
		if v, err := strconv.Atoi(s); err == nil && v >= 0 && v < 1000 {
			n = v
		}
	}
	hosts := make([]string, 0, len(cfg.GitTokens))
	for h := range cfg.GitTokens {
		if boxenv.CheckHost(h) == nil {
			hosts = append(hosts, h)
		}
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		env[fmt.Sprintf("GIT_CONFIG_KEY_%d", n)] = "url." + gitRouteURL(h) + ".insteadOf"
		env[fmt.Sprintf("GIT_CONFIG_VALUE_%d", n)] = "https://" + h + "/"
		n++
	}
	env["GIT_CONFIG_COUNT"] = strconv.Itoa(n)
}
