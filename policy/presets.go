package policy

// This file holds the egress presets: named sets of broker allow-list entries for the common
// package registries, forges and the catalogue agents' APIs, so that broker mode, the default
// network of a new box, works with no egress configuration. Rules:
//   - a preset is code, not configuration: its hosts, the one-line reason each is there and the
//     source it was taken from are reviewed here; docs/EGRESS-PRESETS.md says which were measured
//     on this kind of machine (npm, go) and which come from the clients' documentation only;
//   - egress_presets chooses them by name. Unset, every preset in DefaultPresets applies; the
//     first trusted layer (global file, project file, flag) that sets it replaces that default,
//     and later trusted layers add to it, so `egress_presets = []` in a trusted file drops them
//     all;
//   - the repository's egress_presets only narrows: it is kept apart and a preset applies only
//     when the trusted layers and the repository both name it (the intersection, whatever the
//     layer order), as for git_push. Naming a preset the trusted layers dropped is not an error
//     (it adds nothing); an unknown name is, in any layer, listing the known names;
//   - in broker mode the chosen presets' hosts join egress after every layer, each with the
//     origin "preset NAME" (a host a trusted layer already allows keeps that layer's origin), so
//     the broker's allow-list is presets ∪ egress and `git corral config` shows where each entry
//     came from;
//   - every entry names its port (443, or 80 for plain-HTTP apt): a preset never opens more than
//     its clients use.

import (
	"fmt"
	"slices"
	"strings"
)

// Preset is one named set of allow-list entries.
type Preset struct {
	// Name is how egress_presets names it.
	Name string
	// Why says in one line what needs these hosts.
	Why string
	// Source is where the list comes from: a measurement (docs/EGRESS-PRESETS.md) or the
	// client's documentation.
	Source string
	// Hosts are broker allow-list entries (broker/allow.go), each with its port.
	Hosts []string
}

// presets is the table, in the order their hosts join egress.
var presets = []Preset{
	{Name: "npm", Why: "npm install, npm ci, npx and yarn (classic) fetch package metadata and tarballs from the public registry",
		Source: "measured: npm install through the broker (docs/EGRESS-PRESETS.md); npm's `registry` default, yarn's registry.yarnpkg.com",
		Hosts:  []string{"registry.npmjs.org:443", "registry.yarnpkg.com:443"}},
	{Name: "pypi", Why: "pip install reads the simple index on pypi.org and downloads wheels and sdists from files.pythonhosted.org",
		Source: "pip's --index-url default (https://pypi.org/simple) and PyPI's file host; not measured here (PyPI is unreachable from this machine)",
		Hosts:  []string{"pypi.org:443", "files.pythonhosted.org:443"}},
	{Name: "go", Why: "go mod download with the default GOPROXY (https://proxy.golang.org,direct) and GOSUMDB (sum.golang.org)",
		Source: "measured: go mod download through the broker (docs/EGRESS-PRESETS.md); `go help module-auth`, `go env GOPROXY GOSUMDB`",
		Hosts:  []string{"proxy.golang.org:443", "sum.golang.org:443"}},
	{Name: "crates", Why: "cargo reads the sparse index (index.crates.io), downloads crates from static.crates.io and uses crates.io's API",
		Source: "the Cargo Book (registries: sparse index default since 1.70; index config.json's dl and api); not measured here",
		Hosts:  []string{"index.crates.io:443", "static.crates.io:443", "crates.io:443"}},
	{Name: "github", Why: "git over https and direct Go module fetches (github.com), archives (codeload), raw files and release downloads, and the REST API",
		Source: "GitHub's documented hostnames (docs.github.com, \"About GitHub's IP addresses\" / meta API); not measured here",
		Hosts: []string{"github.com:443", "codeload.github.com:443", "api.github.com:443", "raw.githubusercontent.com:443",
			"objects.githubusercontent.com:443", "release-assets.githubusercontent.com:443"}},
	{Name: "debian", Why: "the packages step installs Debian packages through the broker from the mirror the base image's apt sources name (plain HTTP)",
		Source: "vm/imagerecipe/build-image.sh (the host's first apt URIs line, deb.debian.org by default) and provision/guest/25-packages.sh",
		Hosts:  []string{"deb.debian.org:80", "deb.debian.org:443"}},
	{Name: "anthropic", Why: "Claude Code: the API and the claude.ai / console login (not its telemetry: sentry.io takes reports for anyone's project, an upload path of its own; refusals are logged)",
		Source: "Claude Code documentation, network access requirements (code.claude.com/docs/en/network-config); not measured here",
		Hosts:  []string{"api.anthropic.com:443", "claude.ai:443", "console.anthropic.com:443"}},
	{Name: "openai", Why: "Codex: the API (api key), the ChatGPT-login backend (chatgpt.com) and its login and token refresh (auth.openai.com)",
		Source: "Codex CLI documentation, authentication (github.com/openai/codex docs/authentication.md); not measured here",
		Hosts:  []string{"api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443"}},
	{Name: "gemini", Why: "Gemini CLI: the Gemini API, the Code Assist API of a Google login and its OAuth endpoints (not its usage statistics; refusals are logged)",
		Source: "Gemini CLI documentation (authentication, usage statistics in docs/cli/configuration.md); not measured here",
		Hosts: []string{"generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443",
			"accounts.google.com:443"}},
}

// DefaultPresets are the presets that apply when no trusted layer sets egress_presets: a typical
// Node, Python, Go or Rust project's installs, git over https to GitHub, the packages step, and
// each catalogue agent.
var DefaultPresets = []string{"npm", "pypi", "go", "crates", "github", "debian", "anthropic", "openai", "gemini"}

// Presets returns every preset, in table order.
func Presets() []Preset {
	out := make([]Preset, len(presets))
	for i, p := range presets {
		out[i] = p
		out[i].Hosts = slices.Clone(p.Hosts)
	}
	return out
}

// LookupPreset returns the preset called name.
func LookupPreset(name string) (Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// presetNames lists the known names, for errors.
func presetNames() string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// checkPresetName returns what is wrong with one egress_presets name, or "".
func checkPresetName(name string) string {
	if _, ok := LookupPreset(name); ok {
		return ""
	}
	return fmt.Sprintf("names the unknown preset %q; known presets: %s", name, presetNames())
}

// PresetChoice is egress_presets: the trusted layers' names and the repository's narrowing.
type PresetChoice struct {
	// Trusted are the names the trusted layers chose (DefaultPresets until one sets the key).
	Trusted []string
	// Narrowed is set when the repository's file sets egress_presets; a preset then applies
	// only when Narrow names it too.
	Narrowed bool
	Narrow   []string
	// trustedSet records that a trusted layer replaced the default.
	trustedSet bool
}

// Effective returns the presets that apply, in the trusted order.
func (p PresetChoice) Effective() []string {
	out := []string{}
	for _, n := range p.Trusted {
		if !p.Narrowed || slices.Contains(p.Narrow, n) {
			out = append(out, n)
		}
	}
	return out
}

// applyPresets sets egress_presets from one layer: the first trusted layer replaces the
// default, later ones add; the repository's list is kept apart as the narrowing.
func (l *loader) applyPresets(s setting, o Origin) {
	p := &l.eff.Config.EgressPresets
	names := s.value.([]string)
	if o.Layer == LayerRepository {
		p.Narrowed = true
		l.eff.Origins["egress_presets.repository"] = o
		for _, n := range names {
			if !slices.Contains(p.Narrow, n) {
				p.Narrow = append(p.Narrow, n)
			}
		}
		return
	}
	if !p.trustedSet {
		p.trustedSet, p.Trusted = true, []string{}
	}
	for _, n := range names {
		if !slices.Contains(p.Trusted, n) {
			l.eff.Origins[fmt.Sprintf("egress_presets[%d]", len(p.Trusted))] = o
			p.Trusted = append(p.Trusted, n)
		}
	}
}

// presetHosts adds the chosen presets' hosts to egress in broker mode.
func (l *loader) presetHosts() {
	c := l.eff.Config
	if c.Network != NetworkBroker {
		return
	}
	for _, name := range c.EgressPresets.Effective() {
		p, _ := LookupPreset(name)
		for _, h := range p.Hosts {
			if slices.Contains(c.Egress, h) {
				continue
			}
			l.eff.Origins[fmt.Sprintf("egress[%d]", len(c.Egress))] = Origin{Layer: LayerPreset, Name: name}
			c.Egress = append(c.Egress, h)
		}
	}
}

// presetSettings lists egress_presets for display: the trusted names, then the repository's.
func (e *Effective) presetSettings(k KeySpec) []Setting {
	p := e.Config.EgressPresets
	s := Setting{Key: k.Name, Class: k.Class.String(), Value: append([]string{}, p.Trusted...), Origins: []string{}}
	for i := range p.Trusted {
		o, ok := e.Origins[fmt.Sprintf("egress_presets[%d]", i)]
		if !ok {
			o = Origin{Layer: LayerDefault}
		}
		s.Origins = append(s.Origins, o.String())
	}
	out := []Setting{s}
	if p.Narrowed {
		o := e.Origins["egress_presets.repository"].String()
		n := Setting{Key: k.Name + ".repository", Class: k.Class.String(), Value: append([]string{}, p.Narrow...), Origins: []string{}}
		for range p.Narrow {
			n.Origins = append(n.Origins, o)
		}
		out = append(out, n)
	}
	return out
}
