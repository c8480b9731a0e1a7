package sandbox

// Log rules: one JSON line per run in $CORRAL_HOME/logs/sandbox.jsonl, appended whole under the
// audit package's lock; the broker appends one line per decision to the same file (its own
// shape, with "decision"). A run's line carries the command, the manifest's path and digest,
// what was granted (paths and variable names, never values), the layers that held, how long
// it took, how it ended and which limit ended it.

import (
	"context"
	"github.com/git-corral/git-corral/home"
	"time"

	"github.com/git-corral/git-corral/audit"
)

// EventRun is the event of a run's log line.
const EventRun = "sandbox-run"

// Limits a run can end on, as the log names them.
const (
	LimitTimeout = "timeout"
	LimitOutput  = "output"
	LimitCPU     = "cpu"
	LimitMemory  = "memory"
	LimitPids    = "pids"
	LimitScratch = "scratch"
)

// Record is one run's log line.
type Record struct {
	Time           time.Time `json:"time"`
	Event          string    `json:"event"`
	Argv           []string  `json:"argv"`
	Cwd            string    `json:"cwd,omitempty"`
	Manifest       string    `json:"manifest,omitempty"`
	ManifestDigest string    `json:"manifestDigest,omitempty"`
	// NarrowedBy is the repository file whose [sandbox] table narrowed the manifest.
	NarrowedBy string `json:"narrowedBy,omitempty"`
	Granted    Grants `json:"granted"`
	// DefaultLimits are the defaults the run was held to, for the limits the manifest left
	// unset (DefaultLimits; Granted.Limits are the manifest's own); nil when it set them all,
	// and in lines written before there were defaults.
	DefaultLimits *Limits `json:"defaultLimits,omitempty"`
	// EnvUnset are env.pass names the host did not have (so nothing was passed).
	EnvUnset []string `json:"envUnset"`
	// Layers are the enforcement layers that were applied ("bwrap", "landlock-abi-7",
	// "seccomp", "rlimits"); Weaker says which layer was accepted missing, and by what.
	Layers     []string `json:"layers"`
	Weaker     string   `json:"weaker,omitempty"`
	DurationMs float64  `json:"durationMs"`
	ExitCode   int      `json:"exitCode"`
	Signal     string   `json:"signal,omitempty"`
	// Limit names the limit that ended the run, when one did; LimitDefault says that it was
	// a default (DefaultLimits), not the manifest's.
	Limit        string `json:"limit,omitempty"`
	LimitDefault bool   `json:"limitDefault,omitempty"`
	// Error is set when the sandbox could not be set up (the command never ran).
	Error string `json:"error,omitempty"`
	PID   int    `json:"pid"`
}

// Grants are what the manifest granted: paths and names only.
type Grants struct {
	Read    []string `json:"read"`
	Write   []string `json:"write"`
	Exec    []string `json:"exec"`
	Network []string `json:"network"`
	Env     []string `json:"env"`
	Limits  Limits   `json:"limits"`
}

// LogPath is the sandbox log under corralHome.
func LogPath(corralHome string) string {
	return home.Home{Dir: corralHome}.SandboxLog()
}

// appendRecord writes rec to the log under corralHome.
func appendRecord(ctx context.Context, corralHome string, rec Record) error {
	l := audit.Log{Path: LogPath(corralHome)}
	return l.AppendValue(ctx, rec.WithArrays())
}

// WithArrays returns r with every list an array, never null, as the log and 'audit --json'
// promise.
func (r Record) WithArrays() Record {
	for _, s := range []*[]string{&r.Argv, &r.EnvUnset, &r.Layers, &r.Granted.Read, &r.Granted.Write,
		&r.Granted.Exec, &r.Granted.Network, &r.Granted.Env} {
		if *s == nil {
			*s = []string{}
		}
	}
	return r
}
