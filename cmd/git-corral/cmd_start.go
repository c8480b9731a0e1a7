package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/boxenv"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/session"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/trace"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// boxFlags are the flags every command that boots a box shares.
type boxFlags struct {
	yes      *bool
	noCreate *bool
	network  *string
	env      *[]string
	noGolden *bool // golden bases: cmd_golden.go
	// preflight, when set, runs before any box is looked for or booted (preflight.go).
	preflight func(ctx context.Context, box, dir string, cfg *policy.Config) error
}

func defineBoxFlags(fs *pflag.FlagSet) boxFlags {
	return boxFlags{
		yes:      fs.BoolP("yes", "y", false, "create the box without asking when it does not exist"),
		noCreate: fs.Bool("no-create", false, "fail instead of creating the box when it does not exist"),
		network:  fs.String("network", "", "network mode of a new box: full, broker or offline"),
		env:      fs.StringArray("env", nil, "pass the host variable `NAME` into the session (repeatable)"),
		noGolden: fs.Bool("no-golden", false, "create a new box from scratch, not from its golden base"),
	}
}

// boxSession is everything a session command needs once the box runs.
type boxSession struct {
	m      *vm.Manager
	box    string
	dir    string
	cfg    *policy.Config
	bundle provision.Bundle
	st     vm.Status

	project      *project.Project
	plan         *gitshadow.Plan
	brokerPort   int
	brokerSecret []byte
}

// manager finds limactl and returns the box manager for $CORRAL_HOME, refusing root with the fix.
func (a *app) manager() (*vm.Manager, error) {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return nil, err
	}
	limactl, err := vm.FindLimactl(a.getenv)
	if err != nil {
		return nil, withHint(err, "run 'make lima' (or scripts/setup.sh as root); 'git corral doctor' checks every prerequisite")
	}
	m, err := vm.NewManager(limactl, h)
	if errors.Is(err, vm.ErrRoot) {
		return nil, withHint(err, "run git corral as a normal user, e.g. 'runuser -u USER -- git corral …' (the project must belong to that user)")
	}
	return m, err
}

// config loads the effective configuration of p's box, with --network as the flag layer.
func (a *app) config(ctx context.Context, p *project.Project, f boxFlags) (*policy.Config, error) {
	opts, err := a.loadOptions(ctx, "")
	if err != nil {
		return nil, err
	}
	if err := addNetworkFlag(&opts, f); err != nil {
		return nil, err
	}
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return nil, err
	}
	return eff.Config, nil
}

// addNetworkFlag adds --network to opts as the flag layer, refusing an unknown mode.
func addNetworkFlag(opts *policy.LoadOptions, f boxFlags) error {
	if f.network == nil || *f.network == "" {
		return nil
	}
	switch policy.Network(*f.network) {
	case policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline:
	default:
		return usageErrorf("", "--network %q is not full, broker or offline", *f.network)
	}
	opts.Flags = append(opts.Flags, policy.Flag{Key: "network", Value: *f.network})
	return nil
}

// ensureBox finds the repository's box and makes it run, creating it when allowed.
func (a *app) ensureBox(ctx context.Context, cmd string, f boxFlags) (*boxSession, error) {
	if *f.yes && *f.noCreate {
		return nil, usageErrorf(cmd, "--yes and --no-create exclude each other")
	}
	f.preflight = a.sessionPreflight(cmd, *f.env)
	if s, ok, err := a.cloneDirSession(ctx, cmd, f); ok || err != nil { // clonebox.go
		return s, err
	}
	done := trace.Step("project")
	p, err := a.project(ctx)
	done()
	if err != nil {
		return nil, err
	}
	a.prefetchGuard(ctx, p.Box)
	done = trace.Step("config")
	cfg, err := a.config(ctx, p, f)
	done()
	if err != nil {
		return nil, err
	}
	if cfg.Source == sourceClone { // clonebox.go: no mount, HEAD + tracked changes delivered
		return a.ensureCloneSource(ctx, cmd, f, p, cfg)
	}
	done = trace.Step("preflight")
	err = f.preflight(ctx, p.Box, p.TopLevel, cfg)
	done()
	if err != nil {
		return nil, err
	}
	m, err := a.manager()
	if err != nil {
		return nil, err
	}
	s := &boxSession{m: m, box: p.Box, dir: p.TopLevel, cfg: cfg, project: p}
	meta, _ := m.ReadMeta(p.Box)
	if meta.Network != "" && meta.Network != string(cfg.Network) {
		// The guards are rendered into the box at creation; a box that ran in full mode had root.
		return nil, withHint(fmt.Errorf("box %s was created with network %q, the configuration now says %q", p.Box, meta.Network, cfg.Network),
			"delete it ('git corral delete --yes') and start again to get a box with the new mode")
	}
	if cfg.Network == policy.NetworkBroker {
		if s.brokerPort = meta.BrokerPort; s.brokerPort == 0 {
			if s.brokerPort, err = broker.FreePort(); err != nil {
				return nil, err
			}
		}
	}
	done = trace.Step("render guest")
	g, err := renderGuest(ctx, p, m.Home, p.Box, cfg, s.brokerPort)
	done()
	if err != nil {
		return nil, err
	}
	s.bundle, s.plan = g.bundle, g.plan
	if d := provision.ScriptsDrift(meta.GuestScripts, s.bundle.ProductScripts()); len(d) > 0 {
		// git_tokens or packages added after creation, or another git corral: what the box
		// runs at boot is what it was made with.
		a.notice(fmt.Sprintf("box %s was made with other guest scripts than the configuration renders now (%s): "+
			"they take effect in a new box: 'git corral delete --yes', then start again", p.Box, strings.Join(d, ", ")))
	}
	done = trace.Step("inspect")
	st, err := m.Inspect(p.Box)
	done()
	if err == nil && st.Status != "Running" && s.plan != nil {
		// Before the box can run, record the git metadata it must not change.
		if err := session.SnapshotBeforeBoot(ctx, m.Home, p.Box, s.plan); err != nil {
			return nil, err
		}
	}
	spec := vm.BoxSpec{
		Box: p.Box, ProjectDir: p.TopLevel, Config: cfg, Bundle: s.bundle, Create: !*f.noCreate, BrokerPort: s.brokerPort,
		Progress: vm.NewProgress(a.stderr, a.isTerminal(a.stderr)), Notice: a.notice,
	}
	if !*f.yes {
		spec.Confirm = a.confirmCreate(p.Box, p.TopLevel)
	}
	spec.Golden = cfg.Golden && !*f.noGolden // golden bases: cmd_golden.go
	done = trace.Step("before session (snapshot, idle stop)")
	a.beforeSession(ctx, m, p.Box, cfg) // snapshot and idle stop: cmd_snapshot.go, cmd_gc.go
	done()
	done = trace.Step("ensure")
	s.st, err = m.Ensure(ctx, spec)
	done()
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return nil, err
	case errors.Is(err, vm.ErrNoBox):
		return nil, withHint(err, fmt.Sprintf("run 'git corral %s --yes' to create it", cmd))
	case errors.Is(err, vm.ErrNoImage):
		return nil, withHint(err, "build it once as root: 'sudo git corral image build --dir "+vm.SystemImageDir+"'")
	case err != nil:
		return nil, withHint(err, "'git corral logs' shows what Lima said")
	}
	if cfg.Network == policy.NetworkBroker {
		if s.brokerSecret, err = a.ensureBroker(ctx, m, p.Box, cfg, s.brokerPort); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// confirmCreate asks on a terminal before creating a box; without one it refuses.
func (a *app) confirmCreate(box, dir string) func() (bool, error) {
	return func() (bool, error) {
		if !a.isTerminal(a.stdin) || !a.isTerminal(a.stderr) {
			return false, withHint(fmt.Errorf("box %s does not exist and there is no terminal to ask", box),
				"pass --yes to create it, or --no-create to fail fast")
		}
		fmt.Fprintf(a.stderr, "Create box %s for %s? It boots a VM (about a minute). [y/N] ", box, visible.String(dir))
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		ans := strings.ToLower(strings.TrimSpace(line))
		return ans == "y" || ans == "yes", nil
	}
}

// notice prints a one-line notice on stderr.
func (a *app) notice(msg string) {
	fmt.Fprintf(a.stderr, "corral: notice: %s\n", visible.Lines(msg))
}

// session runs one session in the box: the guard check, the host-side guard, the environment,
// the audit records, and the exit status passed through.
//
// The guard check (guardCheck) runs before the command does, and before any value from the
// host or byte of stdin is sent: the resident guard daemon's report, asked through the
// connection (a session with nothing from the host but its command line is opened meanwhile
// and held at a vm.Gate). Boxes rendered before the daemon have
// two other ways. In-band: the session check is sourced in the same session right before the
// command, which runs only if it passed (provision.InbandGuardPrefix,
// vm.SessionOptions.InbandGuard); no byte of stdin goes in before. Separately (CheckGuards, a
// session of its own before the command's): when the session carries values from the host
// (forwarded variables, tokens: they are sent only once the box passed), a terminal or the SSH
// agent, and for boxes older than the session check.
func (a *app) session(ctx context.Context, s *boxSession, argv []string, env []string, timeout time.Duration) error {
	done := trace.Step("ssh endpoint")
	ep, err := vm.EndpointFromSSHConfig(s.st.SSHConfig, "lima-"+s.box)
	done()
	if err != nil {
		return err
	}
	lg := a.auditLog(s.m.Home)
	rec := audit.Record{Box: s.box, Project: s.dir, Network: string(s.cfg.Network), Profile: s.cfg.Profile}
	tty := a.isTerminal(a.stdin) && a.isTerminal(a.stdout)
	done = trace.Step("environment")
	vars, envNames, hostValues, envErr := a.sessionEnv(s, env)
	done()
	guarded := s.cfg.Network != policy.NetworkFull || len(s.bundle.Scripts) > 0
	inbandOK := envErr == nil && guarded && !hostValues && !tty && !s.cfg.SSHAgent
	opts := vm.SessionOptions{
		Argv: argv, Dir: s.dir, Env: vars, TTY: tty, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Timeout: timeout,
	}
	// A session that carries nothing from the host but its command line (no host values, no
	// terminal, no agent) is opened as soon as the connection is: its shell starts while the
	// guard check and the host's own work run, and waits at a gate (vm.Gate) for the host's
	// go-ahead, which comes only after both passed and the launch is audited. Refused, the
	// shell reads EOF and the command never runs.
	var gate *vm.Gate
	type runResult struct {
		code int
		err  error
	}
	gated := make(chan runResult, 1)
	if how := a.getenv("CORRAL_GUARD_CHECK"); envErr == nil && !hostValues && !tty && !s.cfg.SSHAgent && (how == "" || how == "daemon") {
		gate = vm.NewGate()
		defer gate.Refuse() // every return before Open
	}
	// The connection and the guard check's round trip run beside the host's own work before
	// the session (the snapshot and watch of git metadata, the session base).
	type guardResult struct {
		c       *vm.Client
		inband  bool
		dialErr error
		err     error
	}
	guardDone := make(chan guardResult, 1)
	go func() {
		var r guardResult
		var daemonErr *error // the guard daemon's report, when prefetched through the holder
		var report <-chan struct{}
		// A holder relays no channel the box opens, so agent forwarding needs a connection
		// of its own.
		if pf := a.takePrefetch(s.box); pf != nil && !s.cfg.SSHAgent {
			r.c, daemonErr, report = pf.c, &pf.err, pf.done
		} else {
			if pf != nil {
				pf.c.Close()
			}
			done := trace.Step("dial")
			r.c, r.dialErr = a.dialBox(ctx, s.m.Home, s.box, ep, s.cfg.SSHAgent)
			done()
			if r.dialErr != nil {
				guardDone <- r
				return
			}
		}
		if gate != nil {
			c, o := r.c, opts // copied here: the session goroutine sets opts' other fields later
			o.Gate = gate
			go func() {
				done := trace.Step("gated session")
				defer done()
				code, err := c.Run(ctx, o)
				gated <- runResult{code, err}
			}()
		}
		if report != nil {
			<-report
		}
		done := trace.Step("guard check")
		r.inband, r.err = a.guardCheck(ctx, r.c, s, inbandOK, daemonErr)
		done()
		guardDone <- r
	}()
	// A clone-mode box mounts nothing of the host: no git metadata to guard, no host session base.
	g := &session.Guard{}
	var beginErr error
	if envErr == nil && s.project != nil {
		done := trace.Step("host guard begin (snapshot, watch)")
		g, beginErr = session.Begin(ctx, session.Options{Project: s.project, Home: s.m.Home, Box: s.box, Protect: s.plan != nil, OnChange: a.shadowChange(lg, rec)})
		done()
	}
	endGuard := func() error {
		if envErr != nil || beginErr != nil {
			return nil
		}
		done := trace.Step("host guard end")
		defer done()
		return g.End(context.WithoutCancel(ctx), a.shadowChange(lg, rec))
	}
	done = trace.Step("wait for guard check")
	gr := <-guardDone
	done()
	if gr.dialErr != nil {
		endGuard()
		return withHint(gr.dialErr, "'git corral logs' shows what Lima said")
	}
	c := gr.c
	defer c.Close()
	if gate != nil && (gr.err != nil || gr.inband) {
		// Refused, or a box without the daemon whose check runs in-band: the gated session
		// ends without running anything, before any other session starts.
		gate.Refuse()
		<-gated
		gate = nil
	}
	if gr.err != nil {
		endGuard()
		return a.guardFailed(ctx, lg, rec, gr.err)
	}
	inband := gr.inband
	if envErr != nil {
		return envErr
	}
	if beginErr != nil {
		return withHint(beginErr, "the checkout's git metadata must be repaired before the host's git uses it")
	}
	agentSock, err := a.agentSocket(s)
	if err != nil {
		endGuard()
		return err
	}
	launch := rec
	launch.Event, launch.Argv, launch.EnvNames, launch.SSHAgent = audit.EventLaunch, argv, envNames, agentSock != ""
	done = trace.Step("audit launch")
	err = lg.Append(ctx, launch)
	done()
	if err != nil {
		endGuard()
		return withHint(fmt.Errorf("refusing to run unaudited: %w", err), "free space for $CORRAL_HOME/logs, then start again")
	}
	opts.AgentSocket = agentSock
	if inband {
		opts.InbandGuard = provision.InbandGuardPrefix()
	}
	began := time.Now()
	var code int
	var runErr error
	if gate != nil {
		done = trace.Step("session after the gate")
		gate.Open()
		r := <-gated
		code, runErr = r.code, r.err
		done()
	} else {
		done = trace.Step("session")
		code, runErr = c.Run(ctx, opts)
		done()
	}
	if inband && errors.Is(runErr, vm.ErrNoInbandReport) && code == provision.InbandNoCheckExit {
		// A box rendered before the session check: nothing ran; check separately, then run.
		if gerr := a.separateGuardCheck(ctx, c, s); gerr != nil {
			runErr = gerr
		} else {
			opts.InbandGuard = ""
			code, runErr = c.Run(ctx, opts)
		}
	}
	endErr := endGuard()
	if errors.Is(runErr, vm.ErrGuard) || errors.Is(runErr, vm.ErrNoInbandReport) {
		if errors.Is(runErr, vm.ErrNoInbandReport) {
			runErr = fmt.Errorf("%w: %v (exit %d): the box's session check is missing or broken", vm.ErrGuard, runErr, code)
		}
		err := a.guardFailed(ctx, lg, rec, runErr)
		if endErr != nil {
			return withHint(endErr, "git metadata the box changed could not all be restored: do not run git on the host in this checkout until it is repaired")
		}
		return err
	}
	exit := rec
	exit.Event, exit.ExitCode, exit.DurationMs = audit.EventExit, &code, time.Since(began).Milliseconds()
	done = trace.Step("audit exit")
	lg.Append(ctx, exit)
	done()
	if endErr != nil {
		return withHint(endErr, "git metadata the box changed could not all be restored: do not run git on the host in this checkout until it is repaired")
	}
	if g.Base != "" && a.isTerminal(a.stderr) {
		fmt.Fprintf(a.stderr, "corral: session base %s: 'git corral diff' shows what the box changed in files the host executes\n", g.Base)
	}
	return runErr
}

// guardCheck runs the guest guard check the best way the box allows: the resident guard
// daemon's report (vm.Client.GuardReport: no process starts in the guest, and the box user
// cannot forge it); on a box without the daemon, in-band when inbandOK (it returns true and the
// caller runs the command with the check before it), else in a session of its own. daemonErr,
// when set, is the daemon's answer already read on c. CORRAL_GUARD_CHECK=daemon, inband or
// separate forces one way, for tests and diagnosis.
func (a *app) guardCheck(ctx context.Context, c *vm.Client, s *boxSession, inbandOK bool, daemonErr *error) (inband bool, err error) {
	how := a.getenv("CORRAL_GUARD_CHECK")
	switch how {
	case "", "daemon":
		if daemonErr != nil { // asked already, on this connection (prefetchGuard)
			err = *daemonErr
		} else {
			_, err = c.GuardReport(ctx, provision.GuardSocketPath)
		}
		if !errors.Is(err, vm.ErrNoGuardDaemon) || how == "daemon" {
			return false, err
		}
	case "inband", "separate":
	default:
		return false, usageErrorf("", "CORRAL_GUARD_CHECK=%q: want daemon, inband or separate", how)
	}
	if inbandOK && how != "separate" {
		return true, nil
	}
	return false, a.separateGuardCheck(ctx, c, s)
}

// separateGuardCheck runs the guest guard check in a session of its own (vm.CheckGuards).
func (a *app) separateGuardCheck(ctx context.Context, c vm.Outputter, s *boxSession) error {
	out, err := vm.CheckGuards(ctx, c, s.cfg.Network, s.bundle)
	if err == nil && out.Absent {
		a.notice("no guest guards are rendered for this box (full network, empty provision bundle): the session runs without a guard check")
	}
	return err
}

// guardFailed records a refused session in the audit log and returns the error to show.
func (a *app) guardFailed(ctx context.Context, lg *audit.Log, rec audit.Record, err error) error {
	r := rec
	r.Event, r.Detail = audit.EventGuardFailure, err.Error()
	lg.Append(ctx, r)
	return withHint(err, "the session was refused; 'git corral stop' then 'git corral start' re-applies the guards at boot")
}

// auditLog is the box's audit log.
func (a *app) auditLog(h home.Home) *audit.Log {
	return &audit.Log{Path: h.SessionsLog()}
}

// shadowChange reports a git metadata change on the terminal and in the audit log.
func (a *app) shadowChange(lg *audit.Log, rec audit.Record) func(gitshadow.Change) {
	return session.Report(a.stderr, lg, rec)
}

// sessionEnv assembles the session's variables from the trusted layers (boxenv), with each
// --env NAME forwarded too, plus the broker's proxy settings in broker mode. Values travel only
// inside the SSH channel; the names are returned for the audit log, and hostValues says
// whether any value besides the broker's proxy settings came from the host's configuration.
func (a *app) sessionEnv(s *boxSession, names []string) (vars map[string]string, envNames []string, hostValues bool, err error) {
	for _, n := range names {
		if err := boxenv.CheckName(n); err != nil {
			return nil, nil, false, usageErrorf("", "--env: %v", err)
		}
	}
	e, err := assembleEnv(s.cfg, names)
	if err != nil {
		return nil, nil, false, err
	}
	for _, d := range e.Dropped {
		a.notice("not passed into the box: " + d)
	}
	hostValues = len(e.Values) > 0
	if s.brokerSecret != nil {
		for k, v := range proxyEnv(s.brokerSecret, s.brokerPort) {
			e.Values[k] = v
		}
	}
	return e.Values, e.Names(), hostValues, nil
}

// assembleEnv builds the session environment from cfg's trusted layers and the --env names.
func assembleEnv(cfg *policy.Config, names []string) (boxenv.Env, error) {
	e, err := boxenv.Assemble(boxenv.Sources{
		ForwardEnv: append(append([]string{}, cfg.ForwardEnv...), names...), EnvFromHost: cfg.EnvFromHost,
		Env: cfg.Env, EnvFile: cfg.EnvFile, GitTokens: cfg.GitTokens, NoPassthrough: cfg.NoEnvPassthrough,
	}, os.LookupEnv)
	if err != nil {
		return boxenv.Env{}, withHint(err, "set the host variable, or change env_from_host / git_tokens in the trusted configuration")
	}
	return e, nil
}

func defineStart(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	return func(ctx context.Context, a *app, args []string) error {
		s, err := a.ensureBox(ctx, "start", f)
		if err != nil {
			return err
		}
		var argv []string
		if s.cfg.DefaultAgent != "" {
			argv = append(strings.Fields(s.cfg.DefaultAgent), args...)
		} else if len(args) > 0 {
			return usageErrorf("start", "no default_agent is configured, so ARGS %q have nothing to go to", args)
		}
		return a.session(ctx, s, argv, *f.env, 0)
	}
}

func defineRun(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	timeout := fs.Duration("timeout", 0, "stop the command after `D` (TERM, then KILL) and exit 124")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) == 0 {
			return usageErrorf("run", "run needs a command: git corral run -- CMD...")
		}
		if *timeout < 0 {
			return usageErrorf("run", "--timeout %s is negative", *timeout)
		}
		s, err := a.ensureBox(ctx, "run", f)
		if err != nil {
			return err
		}
		return a.session(ctx, s, args, *f.env, *timeout)
	}
}

func defineShell(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("shell", "shell takes no arguments; use 'git corral run -- CMD...'")
		}
		s, err := a.ensureBox(ctx, "shell", f)
		if err != nil {
			return err
		}
		return a.session(ctx, s, nil, *f.env, 0)
	}
}
