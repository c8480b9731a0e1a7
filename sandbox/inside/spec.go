package inside

import (
	"strings"
	"time"
)

// Paths and descriptors the host side and the steps agree on.
const (
	// InitPath is where the inside binary (cmd/git-corral-sandbox, or git corral itself) is
	// bound, read-only, to run the steps.
	InitPath = "/run/corral/init"
	// SpecFD carries the Spec as JSON, to the init step and from it to the exec step (on the
	// direct path, from the host to the exec step).
	SpecFD = 3
	// ReportFD carries the Report from the init step (on the direct path, the exec step's
	// Started or its setup error) to the host.
	ReportFD = 4
	// CgroupFD is the pids cgroup's cgroup.procs (root only), as bubblewrap passes it; the init
	// step hands it to the exec step as ExecCgroupFD.
	CgroupFD     = 6
	ExecCgroupFD = 4
)

// SetupFailed is the init step's and exec step's status when the sandbox cannot be set up. The
// host turns it into status 1 with the report's message.
const SetupFailed = 1

// Spec is what the inside steps do. It is JSON on the spec pipe.
type Spec struct {
	// Argv is the command, its program an absolute path.
	Argv []string `json:"argv"`
	// Env is the command's environment, NAME=VALUE.
	Env []string `json:"env"`
	// Read, Write and Exec are the Landlock grants.
	Read  []string `json:"read"`
	Write []string `json:"write"`
	Exec  []string `json:"exec"`
	// ExecRoots are the mounts that stay executable (the system directories, exec.allow and
	// the command); the exec step makes every other mount noexec (noexec_linux.go).
	ExecRoots []string `json:"execRoots"`
	// Filter is the whole seccomp program (sandbox.SeccompProgram) as raw sock_filter records,
	// which the steps load over bubblewrap's setup filter once the exec step has made its
	// mounts noexec.
	Filter []byte `json:"filter,omitempty"`
	// Limits are the limits the steps apply (rlimits) or report on.
	Limits Limits `json:"limits"`
	// Broker is the broker socket inside ("" for none); Secret its proxy password.
	Broker string `json:"broker,omitempty"`
	Secret string `json:"secret,omitempty"`
	// RelayPort is the relay's port inside, set by the init step for the exec step.
	RelayPort uint16 `json:"relayPort,omitempty"`
	// Cgroup is set when a pids cgroup's cgroup.procs comes on CgroupFD.
	Cgroup bool `json:"cgroup,omitempty"`
	// NoLandlock accepts running without Landlock (logged).
	NoLandlock bool `json:"noLandlock,omitempty"`
	// Direct is set when bubblewrap starts the exec step itself, without the init step: the
	// command's environment then comes from Env, and the exec step reports a setup failure on
	// the report pipe itself.
	Direct bool `json:"direct,omitempty"`
}

// Limits are the limits of a run that the steps themselves apply, the defaults filled in; a
// zero field means no limit. The host enforces the others (timeout, output) and sizes the
// scratch /tmp through bubblewrap.
type Limits struct {
	// Memory is the address space of each process (RLIMIT_AS), in bytes.
	Memory int64 `json:"memory,omitempty"`
	// Pids caps the processes and threads of the sandbox (RLIMIT_NPROC in its own user
	// namespace; root's through a pids cgroup, Spec.Cgroup); the init step samples the peak.
	Pids int `json:"pids,omitempty"`
	// CPU is the CPU time of each process (RLIMIT_CPU).
	CPU time.Duration `json:"cpuNs,omitempty"`
}

// Report is what the init step tells the host about how the command ended.
type Report struct {
	// Status is the command's exit status, 128+N when signal N ended it.
	Status int `json:"status"`
	// Signal names the signal that ended it, if one did.
	Signal string `json:"signal,omitempty"`
	// ScratchFull is set when the scratch /tmp had no space left at the end.
	ScratchFull bool `json:"scratchFull,omitempty"`
	// PidsPeak is the most processes seen at once (sampled when limits.pids is set).
	PidsPeak int `json:"pidsPeak,omitempty"`
	// MaxRSS is the largest resident size of the command's processes, in bytes.
	MaxRSS int64 `json:"maxRss"`
	// CPU is the CPU time the command's processes used.
	CPU time.Duration `json:"cpuNs"`
	// Error is set when the sandbox could not be set up.
	Error string `json:"error,omitempty"`
	// Started is set by the exec step of a direct run (no init step) just before it execs the
	// command, so that the host can tell bubblewrap's own failure from the command's status.
	Started bool `json:"started,omitempty"`
}

// Within reports whether path is dir or inside it (by name; both clean and absolute).
func Within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// Nearest returns the longest of roots that path is at or under, or "".
func Nearest(path string, roots []string) string {
	best := ""
	for _, r := range roots {
		if Within(path, r) && len(r) > len(best) {
			best = r
		}
	}
	return best
}
