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
}

// Store is the host-side agent store under $CORRAL_HOME/agents.
type Store struct {
	home string
	opt  Options
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
	return &Store{home: home, opt: opt}
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
}

// Locked is one package a store entry was built from, with the integrity it was verified by.
type Locked struct {
	Spec
	Integrity string `json:"integrity"`
	Published string `json:"published"`
}

// Version returns the version the store installs for agent: the trusted pin if any, else the
// catalogue's default.
func (s *Store) Version(a Agent) string {
	if v := s.opt.Versions[a.Name]; v != "" {
		return v
	}
	return a.DefaultVersion
}

// Ensure makes agent at version (empty: Version(agent)) present and verified in the store and
// points its launcher at it. An entry already there is rechecked against its manifest (full
// hash); a mismatch deletes it and fetches again. Progress lines go to progress (may be nil).
func (s *Store) Ensure(ctx context.Context, agent Agent, version string, progress io.Writer) (Installed, error) {
	return Installed{}, fmt.Errorf("ensure agent %q: not implemented yet", agent.Name)
}

// Installed lists every agent version in the store, verified quickly (size and mtime).
func (s *Store) Installed() ([]Installed, error) {
	return nil, errors.New("list agents: not implemented yet")
}

// Verify rechecks every store entry against its manifest with full hashes; it deletes each
// entry that does not match and returns the names of what it deleted.
func (s *Store) Verify(ctx context.Context) ([]string, error) {
	return nil, errors.New("verify agents: not implemented yet")
}

// Latest returns the newest version of agent published at least MinAge ago (for `agents
// update`).
func (s *Store) Latest(ctx context.Context, agent Agent) (string, error) {
	return "", fmt.Errorf("latest agent %q: not implemented yet", agent.Name)
}

// Use is one box's record of an agent it uses.
type Use struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// RecordUse records that box uses inst (what `git corral agents` shows per box). The session
// calls it after Ensure.
func (s *Store) RecordUse(box string, inst Installed) error {
	return errors.New("record agent use: not implemented yet")
}

// Uses returns every box's recorded agents, by box name.
func (s *Store) Uses() (map[string][]Use, error) {
	return nil, errors.New("agent uses: not implemented yet")
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
