package sandbox

// Run rules: every layer is checked before the command starts (bubblewrap on PATH, Landlock's
// ABI, the seccomp filter assembled, every grant present), and any failure is an error before
// anything runs. bubblewrap itself starts with an empty environment, so nothing of the host's
// environment is readable in the sandbox (not even in /proc/1/environ). The timeout and the
// output cap are enforced from the host by killing bubblewrap, whose --die-with-parent then
// ends everything inside.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/git-corral/git-corral/internal/inherit"
	"github.com/git-corral/git-corral/sandbox/dispatch"
)

// Options is one sandboxed run.
type Options struct {
	// Manifest is what is granted; nil grants nothing.
	Manifest *Manifest
	// Argv is the command; its program is looked up on the host's PATH.
	Argv []string
	// Home, CorralHome and Cwd are the host's $HOME, git corral's state directory and the
	// working directory.
	Home, CorralHome, Cwd string
	// Self is the binary re-executed inside for the init and exec steps: InsideBinary of
	// git corral's own path.
	Self string
	// Lookup reads host variables (env.pass, PATH); nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// Stdin, Stdout and Stderr are the command's streams; *os.File values pass straight
	// through (a terminal stays a terminal) unless limits.output is set.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// NoLandlock accepts a kernel without Landlock; the weaker run is logged. Trusted callers
	// only (a command-line flag).
	NoLandlock bool
	// Broker serves a network grant (sandbox/netbroker); nil refuses one (ErrNeedsBroker).
	Broker Broker
}

// HelperName is the small binary that runs the inside steps. make install puts it in
// PREFIX/lib/git-corral, off PATH (on PATH, git would offer it as a "git corral-sandbox"
// subcommand); a build tree has it beside git-corral in bin/.
const HelperName = "git-corral-sandbox"

// InsideBinary returns the binary to run the inside steps: HelperName in ../lib/git-corral
// or beside self when it is there (a start of it costs a fraction of git corral's), else self,
// which has the same 'sandbox --stage NAME' entry.
func InsideBinary(self string) string {
	if helper := dispatch.Beside(self, HelperName); helper != "" {
		return helper
	}
	return self
}

// Result is how a run ended.
type Result struct {
	// Status is the command's exit status (124 when limits.timeout ended it, 128+N for signal N).
	Status int
	// Limit names the limit that ended it, if one did.
	Limit string
	// Default is set when that limit was a default (DefaultLimits), not the manifest's.
	Default bool
	// Record is the line written to the log.
	Record Record
}

// ErrSetup is wrapped by every error that kept the command from starting.
var ErrSetup = errors.New("sandbox not set up; the command did not run")

// Run runs o.Argv in the sandbox and logs the run. An error means the command did not run.
func Run(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	if o.Manifest == nil {
		o.Manifest = &Manifest{}
	}
	// Grants are resolved in place below; the caller's manifest stays as written.
	m := *o.Manifest
	m.Read, m.Write, m.Exec = slices.Clone(m.Read), slices.Clone(m.Write), slices.Clone(m.Exec)
	o.Manifest = &m
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	rec := newRecord(o)
	res, err := run(ctx, o, &rec)
	rec.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		rec.ExitCode, rec.Error = setupFailed, err.Error()
	}
	if lerr := appendRecord(context.WithoutCancel(ctx), o.CorralHome, rec); lerr != nil && err == nil {
		err = fmt.Errorf("sandbox log: %w", lerr)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	res.Record = rec
	return res, nil
}

func newRecord(o Options) Record {
	m := o.Manifest
	rec := Record{
		Time: time.Now().UTC(), Event: EventRun, Argv: o.Argv, Cwd: o.Cwd,
		Manifest: m.Source, ManifestDigest: m.Digest, NarrowedBy: m.NarrowedBy, PID: os.Getpid(),
		Granted: Grants{Read: m.Read, Write: m.Write, Exec: m.Exec, Network: m.Network, Env: m.Env, Limits: m.Limits},
	}
	if _, used := m.Limits.withDefaults(); used != (Limits{}) {
		rec.DefaultLimits = &used
	}
	for _, n := range m.Env {
		if _, ok := o.Lookup(n); !ok {
			rec.EnvUnset = append(rec.EnvUnset, n)
		}
	}
	return rec
}

// run checks every layer, starts bubblewrap and waits.
func run(ctx context.Context, o Options, rec *Record) (*Result, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, errors.New("bubblewrap (bwrap) is not installed: install it (apt-get install bubblewrap)")
	}
	spec, err := prepare(ctx, o, rec)
	if err != nil {
		return nil, err
	}
	defer spec.cleanup()
	return execute(ctx, o, bwrap, spec, rec)
}

// prepared is a checked plan with its broker running.
type prepared struct {
	plan    *Plan
	cgroup  *pidsCgroup
	filter  []byte
	cleanup func()
}

// prepare checks Landlock and the grants, assembles the filter and starts the broker.
func prepare(ctx context.Context, o Options, rec *Record) (*prepared, error) {
	abi := LandlockABI()
	switch {
	case abi >= MinLandlockABI:
		rec.Layers = []string{"bwrap", fmt.Sprintf("landlock-abi-%d", abi), "seccomp", "rlimits"}
	case o.NoLandlock:
		rec.Layers = []string{"bwrap", "seccomp", "rlimits"}
		rec.Weaker = fmt.Sprintf("landlock ABI %d < %d, accepted by --no-landlock", abi, MinLandlockABI)
	default:
		return nil, fmt.Errorf("this kernel's Landlock ABI is %d; the sandbox needs %d or later for its file and exec rules (or accept the weaker mode with --no-landlock)", abi, MinLandlockABI)
	}
	h, err := gather(o)
	if err != nil {
		return nil, err
	}
	whole, err := SeccompProgram()
	if err != nil {
		return nil, err
	}
	filter, err := SetupSeccompProgram()
	if err != nil {
		return nil, err
	}
	p := &prepared{filter: filter, cleanup: func() {}}
	if len(o.Manifest.Network) > 0 {
		if p.cleanup, err = startBroker(ctx, o, &h); err != nil {
			return nil, err
		}
	}
	if p.plan, err = NewPlan(o.Manifest, h, o.Argv); err != nil {
		p.cleanup()
		return nil, err
	}
	p.plan.Spec.NoLandlock = abi < MinLandlockABI && o.NoLandlock
	p.plan.Spec.Filter = whole
	if needPidsCgroup(p.plan.Limits) {
		if o.Manifest.Limits.Pids == 0 && !pidsController() {
			// Only the default asked for it: the run goes on, and its log line says so.
			rec.Weaker = joinWeaker(rec.Weaker, fmt.Sprintf("limits.pids default %d not applied: root is exempt from RLIMIT_NPROC and %s has no pids controller", p.plan.Limits.Pids, pidsRoot))
			return p, nil
		}
		if p.cgroup, err = newPidsCgroup(p.plan.Limits.Pids); err != nil {
			p.cleanup()
			return nil, err
		}
		p.plan.Spec.Cgroup = true
		stop := p.cleanup
		p.cleanup = func() { p.cgroup.remove(); stop() }
	}
	return p, nil
}

// gather reads the host's layout, resolves the program and checks that every grant exists.
func gather(o Options) (Host, error) {
	h := Host{Home: o.Home, CorralHome: o.CorralHome, Self: o.Self, Cwd: o.Cwd, Lookup: o.Lookup, Links: map[string]string{}}
	// A grant is compared with where $CORRAL_HOME really is, as grants are resolved too.
	if real, err := filepath.EvalSymlinks(o.CorralHome); err == nil {
		h.CorralHome = real
	}
	if len(o.Argv) == 0 {
		return h, errors.New("no command given")
	}
	prog, err := lookPath(o.Argv[0], o.Cwd, o.Lookup)
	if err != nil {
		return h, err
	}
	if h.Program, err = filepath.EvalSymlinks(prog); err != nil {
		return h, fmt.Errorf("command %q: %w", o.Argv[0], err)
	}
	for _, l := range systemLinks {
		if t, err := os.Readlink(l); err == nil {
			h.Links[l] = t
		} else if fi, err := os.Stat(l); err == nil && fi.IsDir() {
			h.Links[l] = ""
		}
	}
	h.Etc = EtcPresent(func(p string) bool { _, err := os.Stat(p); return err == nil })
	m := o.Manifest
	var errs []error
	for _, g := range [][]string{m.Read, m.Write, m.Exec} {
		for i, p := range g {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("sandbox manifest %s: grant %q: %w (create it or remove the grant)", m.Source, p, err))
				continue
			}
			g[i] = real
		}
	}
	return h, errors.Join(errs...)
}

// lookPath finds the program like a shell: a name with a slash is taken relative to cwd,
// otherwise it is looked up on the host's PATH.
func lookPath(name, cwd string, lookup func(string) (string, bool)) (string, error) {
	if filepath.IsAbs(name) {
		return name, nil
	}
	if filepath.Base(name) != name {
		return filepath.Join(cwd, name), nil
	}
	path, _ := lookup("PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found on PATH", name)
}

// execute starts bubblewrap with the spec, report and seccomp pipes (and the cgroup's procs
// and the info pipe) and waits for it. Every other descriptor of this process is marked
// close-on-exec first, as git corral does at its start, so that nothing its caller left open
// reaches bubblewrap, the inside steps or the command (package inherit).
func execute(ctx context.Context, o Options, bwrap string, p *prepared, rec *Record) (*Result, error) {
	if err := inherit.CloseOnExec(3); err != nil {
		return nil, err
	}
	specR, specW, _ := os.Pipe()
	repR, repW, _ := os.Pipe()
	secR, secW, _ := os.Pipe()
	cmd := exec.Command(bwrap, p.plan.Args...)
	cmd.Env = []string{}
	cmd.Stdin = o.Stdin
	cmd.ExtraFiles = []*os.File{specR, repW, secR, nil}
	if p.cgroup != nil {
		cmd.ExtraFiles[cgroupFD-3] = p.cgroup.procs
	}
	var infoR, infoW *os.File
	if p.plan.Spec.Direct {
		infoR, infoW, _ = os.Pipe()
		cmd.ExtraFiles = append(cmd.ExtraFiles, infoW)
	}
	lim := p.plan.Limits
	var out *outputCap
	if lim.Output > 0 {
		out = &outputCap{max: lim.Output}
		cmd.Stdout, cmd.Stderr = out.writer(o.Stdout), out.writer(o.Stderr)
	} else {
		cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bubblewrap: %w", err)
	}
	specR.Close()
	repW.Close()
	secR.Close()
	var hw *hostWatch
	if infoW != nil {
		infoW.Close()
		hw = watchSandbox(infoR)
	}
	go func() { secW.Write(p.filter); secW.Close() }()
	go func() { json.NewEncoder(specW).Encode(p.plan.Spec); specW.Close() }()
	var rep Report
	repDone := make(chan struct{})
	go func() { json.NewDecoder(repR).Decode(&rep); repR.Close(); close(repDone) }()
	limit := watch(ctx, cmd, lim.Timeout, out)
	cmd.Wait()
	<-repDone
	if p.plan.Spec.Direct && rep.Started {
		// No init step: the status is bubblewrap's, which passes the command's on (128+N for
		// signal N); the evidence is the host's own.
		rep = Report{Status: cmd.ProcessState.ExitCode()}
		if rep.Status < 0 {
			rep.Status = 128 + 9
		}
		rep.PidsPeak, rep.MaxRSS = hw.stop()
	} else if hw != nil {
		hw.stop()
	}
	if p.cgroup != nil && p.cgroup.hit() {
		rep.PidsPeak = lim.Pids
	}
	return finish(cmd, rep, limit, lim, o.Manifest.Limits, rec)
}

// watch kills bubblewrap when the timeout passes, the output cap is passed or ctx ends;
// it returns the name of the limit that did it.
func watch(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, out *outputCap) func() string {
	var once sync.Once
	var limit string
	stop := func(name string) {
		once.Do(func() { limit = name; cmd.Process.Kill() })
	}
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		timer = t.C
	}
	var over <-chan struct{}
	if out != nil {
		over = out.over()
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-timer:
			stop(LimitTimeout)
		case <-over:
			stop(LimitOutput)
		case <-ctx.Done():
			stop("interrupted")
		case <-done:
		}
	}()
	return func() string { close(done); once.Do(func() {}); return limit }
}

// finish turns bubblewrap's end and the init step's report into the result; written are the
// manifest's own limits, to tell a default that ended the run.
func finish(cmd *exec.Cmd, rep Report, limitOf func() string, lim, written Limits, rec *Record) (*Result, error) {
	limit := limitOf()
	res := &Result{Status: rep.Status, Limit: limit}
	switch {
	case limit == LimitTimeout:
		res.Status = 124
	case limit == "interrupted":
		res.Status = 130
	case limit != "":
		res.Status = 128 + 9
	case rep.Error != "":
		return nil, errors.New(rep.Error)
	case rep == (Report{}) && cmd.ProcessState.ExitCode() != 0:
		return nil, fmt.Errorf("the sandbox failed (status %d) before the command started; the message above says why", cmd.ProcessState.ExitCode())
	default:
		res.Limit = limitFromReport(rep, lim)
	}
	res.Default = res.Limit != "" && isDefault(res.Limit, written)
	rec.ExitCode, rec.Signal, rec.Limit, rec.LimitDefault = res.Status, rep.Signal, res.Limit, res.Default
	return res, nil
}

// limitFromReport names the limit that ended a command that failed, from the evidence the init
// step gathered: SIGXCPU or the CPU time reached (cpu), a full scratch /tmp (scratch), as many
// processes as limits.pids (pids), a resident size of three quarters of limits.memory (memory).
func limitFromReport(rep Report, lim Limits) string {
	if rep.Status == 0 {
		return ""
	}
	switch {
	case lim.CPU > 0 && (rep.Signal == "SIGXCPU" || rep.CPU >= lim.CPU):
		return LimitCPU
	case rep.ScratchFull:
		return LimitScratch
	case lim.Pids > 0 && rep.PidsPeak >= lim.Pids:
		return LimitPids
	case lim.Memory > 0 && rep.MaxRSS >= lim.Memory/4*3:
		return LimitMemory
	}
	return ""
}

// outputCap counts the bytes of stdout and stderr together and stops copying past max.
type outputCap struct {
	mu   sync.Mutex
	n    int64
	max  int64
	done chan struct{}
	once sync.Once
}

func (c *outputCap) over() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

type capWriter struct {
	c *outputCap
	w io.Writer
}

func (c *outputCap) writer(w io.Writer) io.Writer {
	c.over()
	if w == nil {
		w = io.Discard
	}
	return capWriter{c, w}
}

func (cw capWriter) Write(b []byte) (int, error) {
	c := cw.c
	c.mu.Lock()
	room := c.max - c.n
	c.n += int64(len(b))
	c.mu.Unlock()
	if room <= 0 {
		c.once.Do(func() { close(c.done) })
		return len(b), nil
	}
	if int64(len(b)) > room {
		cw.w.Write(b[:room])
		c.once.Do(func() { close(c.done) })
		return len(b), nil
	}
	return cw.w.Write(b)
}
