package agents

// This file is the store's exported surface. Layout under $CORRAL_HOME/agents:
//
//	store/<name>/<version>/package/…     the agent's package, extracted
//	store/<name>/<version>/platform/…    its platform package, when it has one
//	store/<name>/<version>/manifest.json written last: integrity strings, size+sha512 per file
//	store/node/<version>/package/bin/node the pinned Node runtime (with its own manifest.json)
//	store/bin/<name>                      a launcher running the last ensured version
//	cache/                                npm's working directory and tarballs (never mounted)
//	boxes/<box>.json                      which agent versions a box uses
//	state/<box>/<name>/                   an agent's per-box login state
//
// The box mounts store/ read-only at BoxMount; everything in it is addressed relative to the
// launcher's own location, so the same tree works on the host and in the box.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// BoxMount is where the box side mounts StoreDir read-only in every box.
const BoxMount = "/opt/corral/agents"

// BoxBinDir is the directory of launchers the session puts on the box's PATH.
const BoxBinDir = BoxMount + "/bin"

// DefaultMinAge is how old a version must be before the store installs it: most hijacked
// releases are found and pulled within a week. Trusted config (agent_min_age) may change it.
const DefaultMinAge = 7 * 24 * time.Hour

// Sentinel errors; test with errors.Is.
var (
	// ErrTooNew: the version was published less than MinAge ago.
	ErrTooNew = errors.New("version is newer than the minimum age")
	// ErrIntegrity: a tarball does not match the registry's integrity string.
	ErrIntegrity = errors.New("integrity mismatch")
	// ErrTampered: a store entry's files no longer match its manifest.
	ErrTampered = errors.New("store entry does not match its manifest")
	// ErrUnsafeArchive: a tarball holds an entry extraction refuses.
	ErrUnsafeArchive = errors.New("unsafe archive entry")
)

// Dir returns $CORRAL_HOME/agents, the root of everything this package keeps.
func Dir(home string) string { return filepath.Join(home, "agents") }

// StoreDir returns the directory the box side mounts read-only at BoxMount.
func StoreDir(home string) string { return filepath.Join(Dir(home), "store") }

// StateDir returns $CORRAL_HOME/agents/state/<box>/<name>, the agent's login state for a box.
// It refuses a box or agent name that could leave that directory.
func StateDir(home, box, name string) (string, error) {
	if err := checkName("box", box); err != nil {
		return "", err
	}
	if _, err := Lookup(name); err != nil {
		return "", err
	}
	return filepath.Join(Dir(home), "state", box, name), nil
}

// Options are the trusted settings of a Store. The zero value means the defaults.
type Options struct {
	// MinAge refuses versions published more recently; 0 means DefaultMinAge, a negative value
	// turns the rule off (trusted config only: agent_min_age = "0s").
	MinAge time.Duration
	// Versions pins agents to exact versions by name (trusted config agent_versions).
	Versions map[string]string
	// Platform is the guest platform; empty means LinuxX64.
	Platform Platform
	// Npm is the npm program; empty means "npm" on PATH.
	Npm string
	// Now returns the current time (tests); nil means time.Now.
	Now func() time.Time
	// FullCheck makes Ensure hash every file of an entry already in the store (agents
	// install, update); otherwise it compares size, mode and mtime with the manifest, which
	// keeps a session's start fast (a full check of Codex is ~424 MB of sha512).
	FullCheck bool
}

// Store is the host-side agent store under $CORRAL_HOME/agents.
type Store struct {
	home string
	opt  Options
	// agents are the agents whose launchers Verify expects: the catalogue (tests put their own
	// fixture agent in place of one).
	agents []Agent
}

// Open returns the store of home ($CORRAL_HOME) with opt. It creates nothing until used.
func Open(home string, opt Options) *Store {
	if opt.MinAge == 0 {
		opt.MinAge = DefaultMinAge
	}
	if opt.Platform == "" {
		opt.Platform = LinuxX64
	}
	if opt.Npm == "" {
		opt.Npm = "npm"
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Store{home: home, opt: opt, agents: Catalogue()}
}

// Installed is one agent version present in the store.
type Installed struct {
	Name      string   `json:"name"`
	Version   string   `json:"version"`
	Platform  Platform `json:"platform"`
	Packages  []Locked `json:"packages"`
	Node      string   `json:"node,omitempty"`
	Dir       string   `json:"dir"`
	Launcher  string   `json:"launcher,omitempty"`
	Installed string   `json:"installedAt"`
	// Problem says why the entry failed its check; such an entry is fetched again on use.
	Problem string `json:"problem,omitempty"`
}

// Locked is one package a store entry was built from, with the integrity it was verified by.
type Locked struct {
	Spec
	Integrity string `json:"integrity"`
	Published string `json:"published"`
}

// Version returns the version the store installs for agent: the trusted pin (agent_versions)
// if any, else the version the user last chose on the host (`agents install --version`,
// `agents update`), else the catalogue's default.
func (s *Store) Version(a Agent) string {
	if v := s.opt.Versions[a.Name]; v != "" {
		return v
	}
	if v := s.current(a.Name); validVersion(v) == nil {
		return v
	}
	return a.DefaultVersion
}

// Ensure makes agent at version (empty: Version(agent)) present and verified in the store and
// points its launcher at it. An entry already there is rechecked against its manifest (size,
// mode and mtime; every file's sha512 with FullCheck); a mismatch deletes it and fetches it
// again. A new entry is always hashed in full. Progress lines go to progress (may be nil).
func (s *Store) Ensure(ctx context.Context, agent Agent, version string, progress io.Writer) (Installed, error) {
	if version == "" {
		version = s.Version(agent)
	}
	if err := validVersion(version); err != nil {
		return Installed{}, fmt.Errorf("install agent %q: %w", agent.Name, err)
	}
	unlock, err := s.lock(progress)
	if err != nil {
		return Installed{}, err
	}
	defer unlock()
	node := ""
	if agent.NeedsNode {
		node = DefaultNodeVersion
		if _, err := s.ensureNode(ctx, node, progress); err != nil {
			return Installed{}, fmt.Errorf("install agent %q: node runtime: %w", agent.Name, err)
		}
	}
	parts := []part{{spec: Spec{Package: agent.Package, Version: version}, dest: "node_modules/" + agent.Package}}
	if spec, as, ok := agent.PlatformSpec(version, s.opt.Platform); ok {
		parts = append(parts, part{spec: spec, dest: "node_modules/" + as})
	}
	m, err := s.ensureEntry(ctx, agent.Name, version, node, parts, progress)
	if err != nil {
		return Installed{}, fmt.Errorf("install agent %q %s: %w", agent.Name, version, err)
	}
	launcher, err := s.writeLauncher(agent, version, node)
	if err != nil {
		return Installed{}, err
	}
	inst := s.installed(m)
	inst.Launcher = launcher
	return inst, nil
}

// ensureNode makes the Node runtime version present and verified in the store.
func (s *Store) ensureNode(ctx context.Context, version string, progress io.Writer) (manifest, error) {
	spec := Spec{Package: NodePackage(s.opt.Platform), Version: version}
	return s.ensureEntry(ctx, "node", version, "", []part{{spec: spec, dest: "."}}, progress)
}

// installed describes a verified entry.
func (s *Store) installed(m manifest) Installed {
	return Installed{Name: m.Name, Version: m.Version, Platform: m.Platform, Packages: m.Packages,
		Node: m.Node, Dir: s.entryDir(m.Name, m.Version), Installed: m.Installed.Format(time.RFC3339)}
}

// Installed lists every agent version in the store (the Node runtime is not an agent), checked
// quickly against its manifest (size, mode and mtime); an entry that fails has Problem set.
func (s *Store) Installed() ([]Installed, error) {
	var out []Installed
	for _, a := range catalogue {
		versions, err := s.versions(a.Name)
		if err != nil {
			return nil, fmt.Errorf("list agents: %w", err)
		}
		for _, v := range versions {
			m, err := checkEntry(s.entryDir(a.Name, v), false)
			inst := s.installed(m)
			inst.Name, inst.Version, inst.Dir = a.Name, v, s.entryDir(a.Name, v)
			if err != nil {
				inst.Problem = err.Error()
			} else if s.current(a.Name) == v {
				inst.Launcher = filepath.Join(StoreDir(s.home), "bin", a.Name)
			}
			out = append(out, inst)
		}
	}
	return out, nil
}

// versions lists the version directories of name in the store, skipping staging directories.
func (s *Store) versions(name string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(StoreDir(s.home), name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && validVersion(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// current returns the version store/bin/<name> runs, or "".
func (s *Store) current(name string) string {
	v, _ := os.Readlink(filepath.Join(StoreDir(s.home), "bin", name+".version"))
	return v
}

// Latest returns the newest release of agent published at least MinAge ago (for `agents
// update`); prereleases and platform builds are never picked.
func (s *Store) Latest(ctx context.Context, agent Agent) (string, error) {
	times, err := s.npm().times(ctx, agent.Package)
	if err != nil {
		return "", fmt.Errorf("latest agent %q: %w", agent.Name, err)
	}
	v := newestOldEnough(times, s.opt.Now(), s.opt.MinAge)
	if v == "" {
		return "", fmt.Errorf("latest agent %q: no release of %q is older than %s", agent.Name, agent.Package, s.opt.MinAge)
	}
	return v, nil
}

// checkName refuses a name that is empty, a dot name, or holds a path separator or control
// character, so that it stays one path element.
func checkName(what, name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("%s name %q is not usable as a directory name", what, name)
	}
	for _, r := range name {
		if r == '/' || r == '\\' || r < 0x20 || r == 0x7f {
			return fmt.Errorf("%s name %q holds %q: not usable as a directory name", what, name, r)
		}
	}
	return nil
}

// Dir returns the store's directory (what the box side mounts).
func (s *Store) Dir() string { return StoreDir(s.home) }

// MinAge returns the age window in force; negative means off.
func (s *Store) MinAge() time.Duration { return s.opt.MinAge }

// TrustedOptions maps the trusted configuration (policy keys agent_min_age and
// agent_versions) onto Options for a guest of platform p: agent_min_age = "0s" turns the
// window off. The CLI and the session flow both open the store through it.
func TrustedOptions(minAge time.Duration, versions map[string]string, p Platform) Options {
	o := Options{MinAge: minAge, Versions: versions, Platform: p}
	if o.MinAge <= 0 {
		o.MinAge = -1
	}
	return o
}

// FullCheck makes later Ensure calls hash every file of an existing entry (agents install).
func (s *Store) FullCheck() { s.opt.FullCheck = true }
