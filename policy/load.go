package policy

// This file layers the configuration. Rules:
//   - layers, lowest first: built-in defaults, $CORRAL_HOME/config.toml (global, trusted),
//     <top level>/.corral.toml (the repository: restricted), $CORRAL_HOME/projects/<box>.toml
//     (per-project, trusted), command-line flags (trusted); then the profile's floor;
//   - scalars override, arrays take the union (first occurrence order), tables merge by key;
//   - only the file at the git top level is read for the repository layer, never one above it
//     or below it;
//   - the repository may set project-ok keys (cpus, memory and disk capped by the host),
//     may only tighten project-may-tighten keys relative to what the layers below set, and may
//     not name a trusted-only key at all;
//   - every violation of every layer is collected; Load fails with all of them or none.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/git-corral/git-corral/home"
)

// RepoFile is the name of the repository's configuration file at its top level.
const RepoFile = ".corral.toml"

// Layer is where a value came from.
type Layer int

// The layers in the order they apply; LayerProfile is the floor applied last.
const (
	LayerDefault Layer = iota
	LayerGlobal
	LayerRepository
	LayerHostProject
	LayerFlag
	LayerProfile
	// LayerAgent is the running agent's API hosts, added to egress in broker mode (agenthosts.go).
	LayerAgent
	// LayerPreset is the hosts of egress_presets, added to egress in broker mode (presets.go).
	LayerPreset
)

// String names the layer.
func (l Layer) String() string {
	return [...]string{"default", "global", "repository", "project", "flag", "profile", "agent", "preset"}[l]
}

// Origin is where one value came from.
type Origin struct {
	// Layer is the layer that set it.
	Layer Layer `json:"-"`
	// File is the file that set it (global, repository, project layers).
	File string `json:"file,omitempty"`
	// Line is its line in File.
	Line int `json:"line,omitempty"`
	// Name is the flag (--network) or profile (strict) that set it.
	Name string `json:"name,omitempty"`
}

// String renders the origin as file:line, "flag --x", "profile strict" or "default".
func (o Origin) String() string {
	switch o.Layer {
	case LayerDefault:
		return "default"
	case LayerFlag:
		return "flag --" + o.Name
	case LayerProfile:
		return "profile " + o.Name
	case LayerAgent:
		return "agent " + o.Name
	case LayerPreset:
		return "preset " + o.Name
	}
	return fmt.Sprintf("%s:%d", o.File, o.Line)
}

// Flag is one configuration value given on the command line, by key. Array keys take one
// element per Flag; table keys take NAME=value.
type Flag struct {
	Key   string
	Value string
}

// LoadOptions says what to load.
type LoadOptions struct {
	// Home is $CORRAL_HOME, where the trusted files live.
	Home home.Home
	// TopLevel is the real path of the repository's top level; "" loads no repository layer
	// (unless ProjectFile is set) and checks paths only lexically.
	TopLevel string
	// Box is the box name, which names the per-project file; "" skips that layer.
	Box string
	// ProjectFile, when set, is read as the repository layer instead of TopLevel/.corral.toml
	// (config check FILE).
	ProjectFile string
	// Flags are command-line values, applied after every file.
	Flags []Flag
	// Host caps what the repository may ask for; nil measures this host.
	Host *HostLimits
	// AgentHosts returns the API hosts of an agent (default_agent's first word); in broker mode
	// they join egress with the origin "agent NAME". nil adds none.
	AgentHosts func(agent string) []string
}

// Effective is the configuration after every layer, with the origin of every value.
type Effective struct {
	// Config is the effective configuration.
	Config *Config
	// Origins maps each key (scalars: "network"; table entries: "env.NAME"; array elements:
	// "packages[0]") to where its value came from.
	Origins map[string]Origin
}

// loader carries one Load.
type loader struct {
	opts LoadOptions
	host HostLimits
	eff  *Effective
	vs   Violations
}

// Load reads every layer and returns the effective configuration, or a *Violations listing
// every refused setting.
func Load(ctx context.Context, opts LoadOptions) (*Effective, error) {
	if !filepath.IsAbs(opts.Home.Dir) || (opts.TopLevel != "" && !filepath.IsAbs(opts.TopLevel)) {
		// A zero Home would read ./config.toml as the trusted global file.
		return nil, fmt.Errorf("load configuration: home %q and top level %q must be absolute", opts.Home.Dir, opts.TopLevel)
	}
	l := &loader{opts: opts, eff: &Effective{Config: Default(), Origins: map[string]Origin{}}}
	if opts.Host != nil {
		l.host = *opts.Host
	} else {
		l.host = MeasureHost(opts.Home.Dir)
	}
	for _, k := range keys {
		if k.Kind != KindStrings && k.Kind != KindStringMap {
			l.eff.Origins[k.Name] = Origin{Layer: LayerDefault}
		}
	}
	if err := l.file(ctx, LayerGlobal, opts.Home.GlobalConfig()); err != nil {
		return nil, err
	}
	repo := opts.ProjectFile
	if repo == "" && opts.TopLevel != "" {
		repo = filepath.Join(opts.TopLevel, RepoFile)
	}
	if repo != "" {
		if err := l.file(ctx, LayerRepository, repo); err != nil {
			return nil, err
		}
	}
	if opts.Box != "" {
		if err := l.file(ctx, LayerHostProject, opts.Home.ProjectConfig(opts.Box)); err != nil {
			return nil, err
		}
	}
	l.flags()
	l.checkBrokers()
	l.vs.sort()
	if err := l.vs.err(); err != nil {
		return nil, err
	}
	l.floor()
	l.networkDefaulted()
	l.presetHosts()
	l.agentHosts()
	return l.eff, nil
}

// belongs is the trusted file a refused repository setting belongs in.
func (l *loader) belongs() string {
	if l.opts.Box == "" {
		return l.opts.Home.ProjectConfig("<box>")
	}
	return l.opts.Home.ProjectConfig(l.opts.Box)
}

// file reads, classifies and applies one file layer. Only context errors are returned; every
// defect of the file becomes a violation.
func (l *loader) file(ctx context.Context, layer Layer, path string) error {
	data, err := readConfigFile(ctx, path, layer == LayerRepository)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		l.vs.add(Violation{File: path, Class: "invalid", Problem: "cannot be used: " + err.Error(),
			Why: "only a regular file of at most 64 KiB is read"})
		return nil
	}
	if data == nil {
		return nil
	}
	doc, probs := parseDocument(data)
	for _, p := range probs {
		l.vs.add(Violation{File: path, Line: p.line, Key: p.key, Class: "invalid", Problem: p.msg})
	}
	if doc == nil {
		return nil
	}
	li := layerInfo{layer: layer, file: path, belongs: l.belongs()}
	for _, s := range classify(doc, li, &l.vs) {
		if p := checkValue(s, l.opts.TopLevel); p != "" {
			l.vs.add(Violation{File: path, Line: s.line, Key: s.raw, Class: s.spec.Class.String(), Problem: p})
			continue
		}
		if layer == LayerRepository {
			if v, bad := l.repoCheck(s); bad {
				v.File, v.Line, v.Key, v.Belongs = path, s.line, s.raw, li.belongs
				l.vs.add(v)
				continue
			}
		}
		l.apply(s, Origin{Layer: layer, File: path, Line: s.line})
	}
	return nil
}

// apply sets s's value in the effective configuration.
func (l *loader) apply(s setting, o Origin) {
	c, origins := l.eff.Config, l.eff.Origins
	if s.spec.Kind == KindRoutes {
		l.applyRoute(s, o)
		return
	}
	if s.spec.Name == "git_push" {
		l.applyGitPush(s, o)
		return
	}
	if s.spec.Name == "egress_presets" {
		l.applyPresets(s, o)
		return
	}
	switch p := s.spec.field(c).(type) {
	case *string:
		*p = s.value.(string)
	case *int:
		*p = s.value.(int)
	case *bool:
		*p = s.value.(bool)
	case *time.Duration:
		*p = s.value.(time.Duration)
	case *[]string:
		if isSandboxKey(s.spec) {
			// Set, even to nothing: an empty [sandbox] list narrows the manifest's to nothing.
			origins[s.spec.Name] = o
		}
		for _, v := range s.value.([]string) {
			if !slices.Contains(*p, v) {
				origins[fmt.Sprintf("%s[%d]", s.spec.Name, len(*p))] = o
				*p = append(*p, v)
			}
		}
		return
	case *map[string]string:
		if *p == nil {
			*p = map[string]string{}
		}
		(*p)[s.mapKey] = s.value.(string)
		origins[s.spec.Name+"."+s.mapKey] = o
		return
	}
	origins[s.spec.Name] = o
}

// get returns the current value of a scalar key.
func get(c *Config, spec *KeySpec) any {
	switch p := spec.field(c).(type) {
	case *string:
		return *p
	case *bool:
		return *p
	case *int:
		return *p
	}
	return nil
}

// networkDefaulted records whether nothing named a network mode: no layer, no flag, and no
// profile whose floor names one (strict's floor is broker even where the default already is).
func (l *loader) networkDefaulted() {
	c := l.eff.Config
	floored := false
	if p := lookupProfile(c.Profile); p != nil {
		_, floored = p.Floor["network"]
	}
	c.NetworkDefaulted = l.eff.Origins["network"].Layer == LayerDefault && !floored
}

// floor raises every value the effective profile names to at least the profile's value.
func (l *loader) floor() {
	prof := lookupProfile(l.eff.Config.Profile)
	if prof == nil {
		return
	}
	names := make([]string, 0, len(prof.Floor))
	for k := range prof.Floor {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		spec := lookupKey(k)
		min := prof.Floor[k]
		if spec.rank(get(l.eff.Config, spec)) < spec.rank(min) {
			l.apply(setting{spec: spec, value: min}, Origin{Layer: LayerProfile, Name: prof.Name})
		}
	}
}
