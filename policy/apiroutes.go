package policy

// This file holds API broker routes: the trusted-only [api_routes.NAME] tables and the built-in
// catalogue of well-known APIs. Rules:
//   - a route is called by the box at http://NAME.api.corral/PATH through the broker, which adds
//     the credential on the host; the credential itself is never in a configuration file, only
//     the name of the host variable holding it (value_env);
//   - [api_routes.NAME] is trusted-only like every key that spends the user's credentials: the
//     repository may not name it in any spelling (classify.go refuses the whole table);
//   - the table's keys are matched exactly (upstream, header, value_prefix, value_env, allow,
//     base_url_env, forge); anything else, a case variant or a NAME that is not [a-z0-9-] is refused
//     with its file and line;
//   - a [api_routes.NAME] with a built-in NAME changes only the fields it sets; layers merge
//     the same way (tables by key, allow by union);
//   - every api_brokers entry must name a built-in or defined route, and every route it names
//     must be complete (upstream, header, value_env, at least one allow pattern): checked once
//     every layer is read, each problem naming the entry's file and line;
//   - a route with forge set (the built-in github and gitlab routes; forge in a table) is a
//     forge's API: the broker classes its requests and refuses merge, push, protection and
//     GraphQL writes unless forge_api_allow lists the class (broker/forge.go). A route that
//     carries a git_tokens token must have it (the session refuses one that does not).

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/git-corral/git-corral/internal/httpheader"
	"github.com/git-corral/git-corral/internal/lazyre"
	"github.com/git-corral/git-corral/internal/visible"
)

// apiRoutesTable is the first key part of every route key.
const apiRoutesTable = "api_routes"

// APIRoute is one API broker route as configured: no secret, only where the host holds it.
type APIRoute struct {
	// Upstream is the base URL requests go to, such as "https://api.anthropic.com".
	Upstream string `json:"upstream"`
	// Header is the header that carries the credential, such as "x-api-key".
	Header string `json:"header"`
	// ValuePrefix goes before the secret in the header's value, such as "Bearer ".
	ValuePrefix string `json:"valuePrefix,omitempty"`
	// ValueEnv are host variables holding the secret; the first one set is used.
	ValueEnv []string `json:"valueEnv"`
	// Allow are the permitted requests, "METHOD /path" or "METHOD /prefix/*".
	Allow []string `json:"allow"`
	// BaseURLEnv is a box variable set to the route's URL (http://NAME.api.corral), so the
	// agent's client calls the route; "" sets none.
	BaseURLEnv string `json:"baseUrlEnv,omitempty"`
	// PlaceholderEnv is a box variable set to a placeholder, for clients that refuse to start
	// without a key; the broker replaces the header it fills. Built-in routes only.
	PlaceholderEnv string `json:"placeholderEnv,omitempty"`
	// Forge is the forge whose API the route reaches ("github", "gitlab"), whose requests the
	// broker classes (forge_api_allow); "" for another API.
	Forge string `json:"forge,omitempty"`
}

// ForgeKinds are the values of a route's forge field.
var ForgeKinds = []string{"github", "gitlab"}

// ForgeClasses are the values forge_api_allow may list.
var ForgeClasses = []string{"merge", "push", "protection", "write"}

// checkForgeClass checks one forge_api_allow entry.
func checkForgeClass(v string) string {
	if !slices.Contains(ForgeClasses, v) {
		return fmt.Sprintf("has the class %q; want one of %s", v, strings.Join(ForgeClasses, ", "))
	}
	return ""
}

// routeFields are the keys of an [api_routes.NAME] table and their kinds.
var routeFields = map[string]Kind{
	"upstream": KindString, "header": KindString, "value_prefix": KindString,
	"value_env": KindString, "allow": KindStrings, "base_url_env": KindString, "forge": KindString,
}

const routeFieldList = "upstream, header, value_prefix, value_env, allow, base_url_env, forge"

// builtinRoutes is the catalogue of well-known APIs, enabled by naming them in api_brokers.
var builtinRoutes = map[string]APIRoute{
	"anthropic": {Upstream: "https://api.anthropic.com", Header: "x-api-key", ValueEnv: []string{"ANTHROPIC_API_KEY"},
		Allow:      []string{"POST /v1/messages", "POST /v1/messages/count_tokens", "GET /v1/models", "GET /v1/models/*"},
		BaseURLEnv: "ANTHROPIC_BASE_URL", PlaceholderEnv: "ANTHROPIC_API_KEY"},
	"openai": {Upstream: "https://api.openai.com/v1", Header: "Authorization", ValuePrefix: "Bearer ", ValueEnv: []string{"OPENAI_API_KEY"},
		Allow:      []string{"POST /responses", "POST /chat/completions", "POST /embeddings", "GET /models", "GET /models/*"},
		BaseURLEnv: "OPENAI_BASE_URL", PlaceholderEnv: "OPENAI_API_KEY"},
	"gemini": {Upstream: "https://generativelanguage.googleapis.com", Header: "x-goog-api-key", ValueEnv: []string{"GEMINI_API_KEY"},
		Allow:      []string{"POST /v1beta/models/*", "GET /v1beta/models", "GET /v1beta/models/*", "POST /v1/models/*", "GET /v1/models"},
		BaseURLEnv: "GOOGLE_GEMINI_BASE_URL", PlaceholderEnv: "GEMINI_API_KEY"},
	// github: reads, REST and GraphQL; GraphQL mutations and every REST write are refused
	// unless forge_api_allow lists their class or an allow pattern names the REST path.
	"github": {Upstream: "https://api.github.com", Header: "Authorization", ValuePrefix: "Bearer ",
		ValueEnv: []string{"GITHUB_TOKEN", "GH_TOKEN"}, Allow: []string{"GET /*", "POST /graphql"}, Forge: "github"},
	// gitlab: the same for GitLab's REST (/api/v4) and GraphQL APIs; PRIVATE-TOKEN is the
	// header GitLab documents for personal, project and group access tokens.
	"gitlab": {Upstream: "https://gitlab.com", Header: "PRIVATE-TOKEN", ValueEnv: []string{"GITLAB_TOKEN"},
		Allow: []string{"GET /api/v4/*", "POST /api/graphql"}, Forge: "gitlab"},
}

// BuiltinRouteNames lists the catalogue's route names, sorted.
func BuiltinRouteNames() []string {
	names := make([]string, 0, len(builtinRoutes))
	for n := range builtinRoutes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Route returns the route NAME of c: the built-in one with the fields c's [api_routes.NAME]
// sets, or the defined one. ok is false when neither exists.
func (c *Config) Route(name string) (APIRoute, bool) {
	r, builtin := builtinRoutes[name]
	r.ValueEnv, r.Allow = slices.Clone(r.ValueEnv), slices.Clone(r.Allow)
	u, defined := c.APIRoutes[name]
	if !builtin && !defined {
		return APIRoute{}, false
	}
	for _, f := range []struct{ dst, src *string }{{&r.Upstream, &u.Upstream}, {&r.Header, &u.Header},
		{&r.ValuePrefix, &u.ValuePrefix}, {&r.BaseURLEnv, &u.BaseURLEnv}, {&r.Forge, &u.Forge}} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	if len(u.ValueEnv) > 0 {
		r.ValueEnv = slices.Clone(u.ValueEnv)
	}
	if len(u.Allow) > 0 {
		r.Allow = slices.Clone(u.Allow)
	}
	return r, true
}

// routeValue is one field of one route, the value of a route setting.
type routeValue struct {
	field string
	value any // string or []string
}

var routeNameRE = lazyre.New(`^[a-z0-9]([a-z0-9-]{0,62})$`)

// shapeRoute checks an entry under api_routes: [api_routes] and [api_routes.NAME] only open
// tables; api_routes.NAME.FIELD is a setting.
func shapeRoute(spec *KeySpec, e entry) (*setting, string) {
	const want = "must be [api_routes.NAME] tables of " + routeFieldList
	if e.array {
		return nil, "is an array of tables; " + want
	}
	if len(e.path) >= 2 && !routeNameRE.MatchString(e.path[1]) {
		return nil, fmt.Sprintf("names the route %q; a route name is lower-case letters, digits and '-' (the box calls http://NAME.api.corral)", e.path[1])
	}
	switch {
	case len(e.path) == 1 && e.table, len(e.path) == 2 && e.table:
		return nil, ""
	case len(e.path) != 3 || e.table:
		return nil, want
	}
	kind, ok := routeFields[e.path[2]]
	if !ok {
		for f := range routeFields {
			if strings.EqualFold(f, e.path[2]) {
				return nil, fmt.Sprintf("differs from the route key %q only by case or Unicode folding", f)
			}
		}
		return nil, fmt.Sprintf("is not a key of an [api_routes.NAME] table (%s)", routeFieldList)
	}
	v, problem := convert(kind, e.value)
	if problem != "" {
		return nil, problem
	}
	return &setting{spec: spec, mapKey: e.path[1], value: routeValue{field: e.path[2], value: v}, line: e.line, raw: e.raw}, ""
}

// checkRouteValue checks one route field on its own.
func checkRouteValue(s setting) string {
	rv, ok := s.value.(routeValue)
	if !ok {
		return "is set in a trusted file as [api_routes.NAME] tables, not by a flag"
	}
	switch v := rv.value.(type) {
	case []string:
		for _, p := range v {
			if m := checkAllowPattern(p); m != "" {
				return m
			}
		}
		return ""
	case string:
		return checkRouteString(rv.field, v)
	}
	return "has a value of the wrong type"
}

// checkRouteString checks a string field of a route.
func checkRouteString(field, v string) string {
	switch field {
	case "upstream":
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			return fmt.Sprintf("must be an http(s) URL with a host and no user, query or fragment, not %q", v)
		}
	case "header":
		h := strings.ToLower(v)
		if !httpheader.ValidName(v) || h == "host" || strings.HasPrefix(h, "proxy-") || h == "connection" ||
			h == "content-length" || h == "transfer-encoding" || h == "te" || h == "upgrade" {
			return fmt.Sprintf("must be a header name that carries a credential (such as \"Authorization\" or \"x-api-key\"), not %q", v)
		}
	case "value_env", "base_url_env":
		if !envNameRE.MatchString(v) {
			return fmt.Sprintf("must be a variable name, not %q", v)
		}
	case "forge":
		if !slices.Contains(ForgeKinds, v) {
			return fmt.Sprintf("must name a forge whose API the broker knows (%s), not %q", strings.Join(ForgeKinds, ", "), v)
		}
	case "value_prefix":
		if len(v) > 64 || visible.Has(v) || !httpheader.ValidValue(v) {
			return fmt.Sprintf("must be at most 64 printable characters such as \"Bearer \", not %q", v)
		}
	}
	return ""
}

// checkAllowPattern checks one "METHOD /path" pattern as the broker reads it.
func checkAllowPattern(p string) string {
	method, pth, ok := strings.Cut(p, " ")
	if !ok || method == "" || method != strings.ToUpper(method) || !httpheader.ValidName(method) ||
		!strings.HasPrefix(pth, "/") || strings.ContainsAny(pth, " %?#") || visible.Has(pth) ||
		slices.Contains(strings.Split(pth, "/"), "..") {
		return fmt.Sprintf("has the allow pattern %q; want \"METHOD /path\" or \"METHOD /prefix/*\" (upper-case method, clean path)", p)
	}
	return ""
}

// applyRoute sets one route field in the effective configuration.
func (l *loader) applyRoute(s setting, o Origin) {
	c, rv := l.eff.Config, s.value.(routeValue)
	if c.APIRoutes == nil {
		c.APIRoutes = map[string]APIRoute{}
	}
	r := c.APIRoutes[s.mapKey]
	key := apiRoutesTable + "." + s.mapKey + "." + rv.field
	switch rv.field {
	case "allow":
		for _, p := range rv.value.([]string) {
			if !slices.Contains(r.Allow, p) {
				l.eff.Origins[fmt.Sprintf("%s[%d]", key, len(r.Allow))] = o
				r.Allow = append(r.Allow, p)
			}
		}
	case "value_env":
		r.ValueEnv = []string{rv.value.(string)}
	default:
		*map[string]*string{"upstream": &r.Upstream, "header": &r.Header, "value_prefix": &r.ValuePrefix,
			"base_url_env": &r.BaseURLEnv, "forge": &r.Forge}[rv.field] = rv.value.(string)
	}
	if rv.field != "allow" {
		l.eff.Origins[key] = o
	}
	l.eff.Origins[apiRoutesTable] = o // the last layer that set any route
	c.APIRoutes[s.mapKey] = r
}

// checkBrokers reports every api_brokers entry that names no route, or a route missing a
// field, at the entry's origin.
func (l *loader) checkBrokers() {
	c := l.eff.Config
	for i, name := range c.APIBrokers {
		o := l.eff.Origins[fmt.Sprintf("api_brokers[%d]", i)]
		v := Violation{File: o.File, Line: o.Line, Key: "api_brokers", Class: TrustedOnly.String()}
		if o.Layer == LayerFlag {
			v.File = "flag --api_brokers"
		}
		r, ok := c.Route(name)
		switch {
		case !ok:
			v.Problem = fmt.Sprintf("names the API route %q, which is neither built in (%s) nor defined", name, strings.Join(BuiltinRouteNames(), ", "))
			v.Why = "define it as [api_routes." + name + "] (" + routeFieldList + ") in the same trusted file, or remove the entry"
		case r.Upstream == "" || r.Header == "" || len(r.ValueEnv) == 0 || len(r.Allow) == 0:
			v.Problem = fmt.Sprintf("names the API route %q, which lacks upstream, header, value_env or allow", name)
			v.Why = "a route needs all four: where to send, which header, which host variable holds the secret, and what the box may call"
		default:
			continue
		}
		l.vs.add(v)
	}
}

// routeSettings lists the route fields c sets, for display.
func (e *Effective) routeSettings(k KeySpec) []Setting {
	var out []Setting
	names := make([]string, 0, len(e.Config.APIRoutes))
	for n := range e.Config.APIRoutes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r, key := e.Config.APIRoutes[n], k.Name+"."+n+"."
		for _, f := range []struct{ name, v string }{{"upstream", r.Upstream}, {"header", r.Header},
			{"value_prefix", r.ValuePrefix}, {"base_url_env", r.BaseURLEnv}, {"forge", r.Forge}} {
			if f.v != "" {
				out = append(out, Setting{Key: key + f.name, Class: k.Class.String(), Value: f.v, Origin: e.Origins[key+f.name].String()})
			}
		}
		if len(r.ValueEnv) > 0 {
			out = append(out, Setting{Key: key + "value_env", Class: k.Class.String(), Value: r.ValueEnv[0], Origin: e.Origins[key+"value_env"].String()})
		}
		if len(r.Allow) > 0 {
			s := Setting{Key: key + "allow", Class: k.Class.String(), Value: slices.Clone(r.Allow)}
			for i := range r.Allow {
				s.Origins = append(s.Origins, e.Origins[fmt.Sprintf("%sallow[%d]", key, i)].String())
			}
			out = append(out, s)
		}
	}
	return out
}
