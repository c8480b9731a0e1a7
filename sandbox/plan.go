package sandbox

// Plan rules:
//   - The sandbox sees the system directories read-only (/usr and the /bin, /sbin, /lib*
//     links or directories beside it), the files of /etc that programs need (never shadow,
//     ssh or sudo files), its own /proc and /dev, a private size-limited /tmp, and the
//     manifest's grants at their host paths. Nothing else of the host is mounted.
//   - A grant may not be or contain $CORRAL_HOME, nor lie inside it, nor be "/", /proc or /dev:
//     the host's own state never enters a sandbox.
//   - Values never travel on bubblewrap's argv (which any local process can read in /proc):
//     the environment, the command and the broker's secret go through the spec pipe.
//   - Mounts are ordered parents first, so a read-only grant inside a writable one stays
//     read-only, and grants inside /tmp are mounted after the scratch tmpfs.
//   - Every program exec.allow lists outside the system directories, and the command itself,
//     is a mount of its own (read-write only inside fs.write), because the exec step makes every
//     other mount noexec (ExecRoots): then no file of fs.read, fs.write or /tmp can be mapped
//     as code, not even by the dynamic loader run directly.
//   - bubblewrap gives the inside steps CAP_SYS_ADMIN and CAP_SETPCAP in the sandbox's user
//     namespace (root's steps have every capability there) for that remount; the steps drop
//     every capability before the command runs.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/git-corral/git-corral/sandbox/inside"
)

// Paths inside the sandbox that git corral itself provides.
const (
	// InitPath is where the inside binary is bound, read-only, to run the inside steps.
	InitPath = inside.InitPath
	// brokerDir is where the host's broker socket directory is bound.
	brokerDir = "/run/corral/broker"
	// brokerSock is the socket's name in it.
	brokerSock = "broker.sock"
)

// File descriptors bubblewrap and the inside steps receive (package inside has the steps' own).
const (
	// seccompFD carries bubblewrap's filter: the setup filter (SetupSeccompProgram), which
	// lets the exec step remount; the steps load the whole filter (Spec.Filter) over it.
	seccompFD = 5
	// cgroupFD is the pids cgroup's cgroup.procs (root only).
	cgroupFD = inside.CgroupFD
	// infoFD is where bubblewrap writes its child's PID on the direct path (--info-fd).
	infoFD = 7
)

// systemLinks are the top-level system paths that are either directories or (merged /usr)
// symlinks into /usr.
var systemLinks = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// EtcFiles are the files and directories of /etc a sandbox sees, when the host has them.
var EtcFiles = []string{
	"/etc/alternatives", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/group",
	"/etc/host.conf", "/etc/hosts", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/localtime", "/etc/mime.types", "/etc/nsswitch.conf", "/etc/passwd", "/etc/protocols",
	"/etc/services", "/etc/ssl",
}

// Host is what the plan needs to know about this machine. Gather fills it; tests give it.
type Host struct {
	// Home and CorralHome are the host's $HOME and git corral's state directory.
	Home, CorralHome string
	// Self is the git corral binary re-executed inside.
	Self string
	// Program is the command's program as an absolute host path.
	Program string
	// Cwd is the directory the command was started from.
	Cwd string
	// Links maps each of systemLinks present on the host to its symlink target, or to "" when
	// it is a real directory.
	Links map[string]string
	// Etc are the EtcFiles present on the host.
	Etc []string
	// Lookup returns a host variable for env.pass.
	Lookup func(string) (string, bool)
	// Relay is set when the run has a broker: the socket directory on the host.
	BrokerDir string
	// Secret is the broker's per-run proxy secret.
	Secret string
}

// Plan is one run: bubblewrap's argv and the spec of the inside steps.
type Plan struct {
	// Args are bubblewrap's arguments (without "bwrap").
	Args []string
	// Spec goes to the init step through the spec pipe.
	Spec Spec
	// Limits are the run's limits, the defaults filled in: the host enforces the timeout and
	// the output cap and reports on all of them; Spec.Limits carries those the steps apply.
	Limits Limits
}

// Spec is what the inside steps do (package inside), JSON on the spec pipe.
type Spec = inside.Spec

// Report is what the init step, or the exec step of a direct run, tells the host.
type Report = inside.Report

// setupFailed is the status of a run whose sandbox could not be set up.
const setupFailed = inside.SetupFailed

// MinLandlockABI is the oldest Landlock ABI the sandbox uses (3: truncation is controlled).
const MinLandlockABI = inside.MinLandlockABI

// LandlockABI returns the kernel's Landlock ABI version, 0 when it has none.
func LandlockABI() int { return inside.LandlockABI() }

// Stage runs one of the inside steps ("init" or "exec") and returns the process's exit status:
// git corral's own 'sandbox --stage NAME', when the helper is not installed beside it.
func Stage(name string) int { return inside.Stage(name) }

// insideLimits are the limits of l that the inside steps apply.
func insideLimits(l Limits) inside.Limits {
	return inside.Limits{Memory: l.Memory, Pids: l.Pids, CPU: l.CPU}
}

// Direct reports whether a run can do without the init step, saving the start of one process:
// it has no broker to relay and no limit whose attribution needs the init step's report
// (limits.pids, cpu, memory, an explicit scratch). The status then comes from bubblewrap
// (128+N for signal N, without the signal's name in the log), and orphans are reaped by
// bubblewrap's own init.
func Direct(m *Manifest) bool {
	l := m.Limits
	return len(m.Network) == 0 && l.Pids == 0 && l.CPU == 0 && l.Memory == 0 && l.Scratch == 0
}

// ErrGrant is wrapped by every refused grant.
var ErrGrant = errors.New("grant refused")

// NewPlan turns m and the host's layout into a plan, or refuses a grant that would expose the
// host's own state.
func NewPlan(m *Manifest, h Host, argv []string) (*Plan, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: no command given")
	}
	if err := checkGrants(m, h); err != nil {
		return nil, err
	}
	lim := m.Limits.WithDefaults()
	p := &Plan{Limits: lim, Spec: Spec{
		Argv: append([]string{h.Program}, argv[1:]...), Env: commandEnv(m, h),
		Read: m.Read, Write: m.Write, Exec: append(append([]string{}, m.Exec...), h.Program),
		Limits: insideLimits(lim),
	}}
	if h.BrokerDir != "" {
		p.Spec.Broker, p.Spec.Secret = brokerDir+"/"+brokerSock, h.Secret
	}
	p.Spec.Direct = Direct(m)
	p.Spec.ExecRoots = append(systemExecDirs(h), p.Spec.Exec...)
	p.Args = bwrapArgs(m, h, lim.Scratch)
	if p.Spec.Direct {
		// bubblewrap starts the exec step itself, and tells the host the PID of its child, whose
		// /proc the host watches for the evidence the init step would gather (hostwatch.go).
		tail := len(p.Args) - 5 // "--", InitPath, "sandbox", "--stage", "init"
		p.Args = append(p.Args[:tail:tail], "--info-fd", strconv.Itoa(infoFD), "--", InitPath, "sandbox", "--stage", "exec")
	}
	return p, nil
}

// checkGrants refuses grants of the host's state or of the sandbox's own mounts.
func checkGrants(m *Manifest, h Host) error {
	var errs []error
	check := func(key string, paths []string) {
		for _, p := range paths {
			if why := refusal(p, h.CorralHome); why != "" {
				errs = append(errs, fmt.Errorf("sandbox manifest %s: %s: %q %s: %w", m.Source, key, p, why, ErrGrant))
			}
		}
	}
	check("fs.read", m.Read)
	check("fs.write", m.Write)
	check("exec.allow", m.Exec)
	return errors.Join(errs...)
}

// refusal says why path may not be granted, or "".
func refusal(path, corralHome string) string {
	switch {
	case path == "/":
		return "is the whole host; grant narrower paths"
	case within(path, "/proc"), within(path, "/dev"), within(path, "/run/corral"):
		return "is provided by the sandbox itself"
	case corralHome != "" && (within(corralHome, path) || within(path, corralHome)):
		return fmt.Sprintf("would expose git corral's state %s; grant narrower paths", corralHome)
	}
	return ""
}

// within reports whether path is dir or inside it (the steps' own rule).
var within = inside.Within

// commandEnv is the command's environment: a fixed PATH, HOME and TMPDIR, then env.pass.
func commandEnv(m *Manifest, h Host) []string {
	env := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp"}
	for _, n := range m.Env {
		if v, ok := h.Lookup(n); ok {
			env[n] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// bwrapArgs builds bubblewrap's argv.
func bwrapArgs(m *Manifest, h Host, scratch int64) []string {
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
		"--new-session", "--clearenv", "--setenv", "HOME", "/tmp", "--hostname", "corral-sandbox",
		"--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP",
		"--ro-bind", "/usr", "/usr",
	}
	for _, l := range systemLinks {
		target, ok := h.Links[l]
		switch {
		case !ok:
		case target != "":
			a = append(a, "--symlink", target, l)
		default:
			a = append(a, "--ro-bind", l, l)
		}
	}
	for _, e := range h.Etc {
		a = append(a, "--ro-bind", e, e)
	}
	early, late := mounts(m, h)
	a = append(a, early...)
	a = append(a, "--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(scratch, 10), "--tmpfs", "/tmp")
	a = append(a, late...)
	a = append(a, "--ro-bind", h.Self, InitPath)
	if h.BrokerDir != "" {
		a = append(a, "--bind", h.BrokerDir, brokerDir)
	}
	a = append(a, "--chdir", workDir(m, h.Cwd), "--seccomp", strconv.Itoa(seccompFD),
		"--", InitPath, "sandbox", "--stage", "init")
	return a
}

// mounts returns the grants' bind mounts, parents first, split into those outside /tmp
// (mounted before the scratch tmpfs) and inside it (after). A program to execute (exec.allow,
// the command) outside the system directories is always a mount of its own, so that it stays
// executable when the grant around it is made noexec; it is read-write only when the nearest
// grant around it is fs.write.
func mounts(m *Manifest, h Host) (early, late []string) {
	kind := map[string]string{}
	for _, p := range m.Read {
		kind[p] = "--ro-bind"
	}
	for _, p := range m.Write {
		kind[p] = "--bind"
	}
	for _, p := range append(append([]string{}, m.Exec...), h.Program) {
		if _, ok := kind[p]; !ok && !systemPath(p, h) {
			kind[p] = "--ro-bind"
			if g := inside.Nearest(p, append(append([]string{}, m.Read...), m.Write...)); g != "" {
				kind[p] = kind[g]
			}
		}
	}
	paths := make([]string, 0, len(kind))
	for p := range kind {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		di, dj := strings.Count(paths[i], "/"), strings.Count(paths[j], "/")
		if di != dj {
			return di < dj
		}
		return paths[i] < paths[j]
	})
	for _, p := range paths {
		if within(p, "/tmp") {
			late = append(late, kind[p], p, p)
		} else {
			early = append(early, kind[p], p, p)
		}
	}
	return early, late
}

// systemPath reports whether path is inside the system directories the sandbox mounts
// read-only and executable (/usr, and /bin, /lib… where they are directories).
func systemPath(path string, h Host) bool {
	for _, d := range systemExecDirs(h) {
		if within(path, d) {
			return true
		}
	}
	return false
}

// systemExecDirs are the system directories mounted as they are, executable: /usr and those
// of systemLinks that are directories on the host.
func systemExecDirs(h Host) []string {
	dirs := []string{"/usr"}
	for _, l := range systemLinks {
		if target, ok := h.Links[l]; ok && target == "" {
			dirs = append(dirs, l)
		}
	}
	return dirs
}

// workDir is where the command starts: the host's directory when a grant covers it, else /tmp.
func workDir(m *Manifest, cwd string) string {
	for _, g := range append(append([]string{}, m.Read...), m.Write...) {
		if cwd != "" && within(cwd, g) {
			return cwd
		}
	}
	return "/tmp"
}

// EtcPresent returns the EtcFiles that exist, given a stat function.
func EtcPresent(exists func(string) bool) []string {
	var out []string
	for _, e := range EtcFiles {
		if exists(e) {
			out = append(out, e)
		}
	}
	return out
}
