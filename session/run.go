package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/trace"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// Streams are a session's standard streams.
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// hintRepair is the hint of a git metadata change that could not be undone.
const hintRepair = "git metadata the box changed could not all be restored: do not run git on the host in this checkout until it is repaired"

// Run runs argv in the box (a login shell when argv is empty): the guard check, the host-side
// guard, the environment, the audit records, and the exit status passed through (an error
// with GuestStatus). A timeout above zero ends the command (TERM, then KILL) with 124.
//
// The guard check runs before the command does, and before any value from the host or byte of
// stdin is sent: the resident guard daemon's report, asked through the connection (a session
// with nothing from the host but its command line is opened meanwhile and held at a vm.Gate).
// Boxes rendered before the daemon have two other ways. In-band: the session check is sourced
// in the same session right before the command, which runs only if it passed
// (provision.InbandGuardPrefix, vm.SessionOptions.InbandGuard); no byte of stdin goes in
// before. Separately (CheckGuards, a session of its own before the command's): when the
// session carries values from the host (forwarded variables, tokens: they are sent only once
// the box passed), a terminal or the SSH agent, and for boxes older than the session check.
func (b *Box) Run(ctx context.Context, argv []string, st Streams, timeout time.Duration) error {
	done := trace.Step("ssh endpoint")
	ep, err := b.endpoint()
	done()
	if err != nil {
		return err
	}
	prelude, agentAuth, err := b.agentSession(ctx, argv) // agentbox.go
	if err != nil {
		return err
	}
	lg := AuditLog(b.Manager.Home)
	rec := AuditRecord(b)
	tty := b.req.terminal(st.Stdin) && b.req.terminal(st.Stdout)
	done = trace.Step("environment")
	vars, envNames, hostValues, envErr := b.env(agentAuth...)
	done()
	guarded := b.Config.Network != "full" || len(b.Bundle.Scripts) > 0
	inbandOK := envErr == nil && guarded && !hostValues && !tty && !b.Config.SSHAgent
	opts := vm.SessionOptions{
		Argv: argv, Dir: b.Dir, Prelude: prelude, Env: vars, TTY: tty, Stdin: st.Stdin, Stdout: st.Stdout, Stderr: st.Stderr, Timeout: timeout,
	}
	// A session that carries nothing from the host but its command line (no host values, no
	// terminal, no agent) is opened as soon as the connection is: its shell starts while the
	// guard check and the host's own work run, and waits at a gate (vm.Gate) for the host's
	// go-ahead, which comes only after both passed and the launch is audited. Refused, the
	// shell reads EOF and the command never runs.
	var gate *vm.Gate
	if how := b.req.getenv("CORRAL_GUARD_CHECK"); envErr == nil && !hostValues && !tty && !b.Config.SSHAgent && (how == "" || how == "daemon") {
		gate = vm.NewGate()
		defer gate.Refuse() // every return before Open
	}
	gated := make(chan runResult, 1)
	guardDone := make(chan guardResult, 1)
	go b.connectAndCheck(ctx, ep, opts, gate, inbandOK, gated, guardDone)
	// The connection and the guard check's round trip run beside the host's own work before
	// the session (the snapshot and watch of git metadata, the session base). A clone-mode box
	// mounts nothing of the host: no git metadata to guard, no host session base.
	g := &Guard{}
	var beginErr error
	if envErr == nil && b.Project != nil {
		done := trace.Step("host guard begin (snapshot, watch)")
		g, beginErr = Begin(ctx, Options{Project: b.Project, Home: b.Manager.Home, Box: b.Name, Protect: b.Plan != nil, OnChange: Report(st.Stderr, lg, rec), Notice: b.req.notice})
		done()
	}
	endGuard := func() error {
		if envErr != nil || beginErr != nil {
			return nil
		}
		done := trace.Step("host guard end")
		defer done()
		return g.End(context.WithoutCancel(ctx), Report(st.Stderr, lg, rec))
	}
	done = trace.Step("wait for guard check")
	gr := <-guardDone
	done()
	if gr.dialErr != nil {
		endGuard()
		return hint.With(gr.dialErr, "'git corral logs' shows what Lima said")
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
		return b.guardFailed(ctx, lg, rec, gr.err)
	}
	if envErr != nil {
		return envErr
	}
	if beginErr != nil {
		return hint.With(beginErr, "the checkout's git metadata must be repaired before the host's git uses it")
	}
	agentSock, err := b.agentSocket()
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
		return hint.With(fmt.Errorf("refusing to run unaudited: %w", err), "free space for $CORRAL_HOME/logs, then start again")
	}
	opts.AgentSocket = agentSock
	if gr.inband {
		opts.InbandGuard = provision.InbandGuardPrefix()
	}
	began := time.Now()
	code, runErr := b.launch(ctx, c, gate, gated, opts)
	endErr := endGuard()
	if errors.Is(runErr, vm.ErrGuard) || errors.Is(runErr, vm.ErrNoInbandReport) {
		if errors.Is(runErr, vm.ErrNoInbandReport) {
			runErr = fmt.Errorf("%w: %v (exit %d): the box's session check is missing or broken", vm.ErrGuard, runErr, code)
		}
		err := b.guardFailed(ctx, lg, rec, runErr)
		if endErr != nil {
			return hint.With(endErr, hintRepair)
		}
		return err
	}
	exit := rec
	exit.Event, exit.ExitCode, exit.DurationMs = audit.EventExit, &code, time.Since(began).Milliseconds()
	done = trace.Step("audit exit")
	lg.Append(ctx, exit)
	done()
	if endErr != nil {
		return hint.With(endErr, hintRepair)
	}
	if err := g.BaseError(); err != nil {
		return hint.With(fmt.Errorf("record the session base: %w", err), "free space for $CORRAL_HOME/sessions; until a base is written, 'git corral diff' compares against the one before")
	}
	if g.Base != "" && b.req.terminal(st.Stderr) {
		fmt.Fprintf(st.Stderr, "corral: session base %s: 'git corral diff' shows what the box changed in files the host executes\n", g.Base)
	}
	return runErr
}

type runResult struct {
	code int
	err  error
}

type guardResult struct {
	c       *vm.Client
	inband  bool
	dialErr error
	err     error
}

// connectAndCheck connects to the box (the prefetched holder connection when there is one),
// opens the gated session when gate is set, and runs the guard check; the outcome goes to
// guardDone, the gated session's to gated.
func (b *Box) connectAndCheck(ctx context.Context, ep vm.Endpoint, opts vm.SessionOptions, gate *vm.Gate, inbandOK bool, gated chan<- runResult, guardDone chan<- guardResult) {
	var r guardResult
	var daemon *daemonAnswer // the guard daemon's report, when prefetched through the holder
	var report <-chan struct{}
	// A holder relays no channel the box opens, so agent forwarding needs a connection of its
	// own.
	if pf := b.takePrefetch(); pf != nil && !b.Config.SSHAgent {
		r.c, daemon, report = pf.c, &pf.ans, pf.done
	} else {
		if pf != nil {
			pf.c.Close()
		}
		done := trace.Step("dial")
		r.c, r.dialErr = b.dial(ctx, ep, b.Config.SSHAgent)
		done()
		if r.dialErr != nil {
			guardDone <- r
			return
		}
	}
	if gate != nil {
		c := r.c
		opts.Gate = gate
		go func() {
			done := trace.Step("gated session")
			defer done()
			code, err := c.Run(ctx, opts)
			gated <- runResult{code, err}
		}()
	}
	if report != nil {
		<-report
	}
	done := trace.Step("guard check")
	r.inband, r.err = b.guardCheck(ctx, r.c, inbandOK, daemon)
	done()
	guardDone <- r
}

// launch runs the session: through the open gate, or on c. A box rendered before the session
// check answers an in-band check with InbandNoCheckExit having run nothing: it is checked
// separately, then the command runs.
func (b *Box) launch(ctx context.Context, c *vm.Client, gate *vm.Gate, gated <-chan runResult, opts vm.SessionOptions) (int, error) {
	if gate != nil {
		done := trace.Step("session after the gate")
		defer done()
		gate.Open()
		r := <-gated
		return r.code, r.err
	}
	done := trace.Step("session")
	code, err := c.Run(ctx, opts)
	done()
	if opts.InbandGuard != "" && errors.Is(err, vm.ErrNoInbandReport) && code == provision.InbandNoCheckExit {
		if gerr := b.separateGuardCheck(ctx, c); gerr != nil {
			return code, gerr
		}
		opts.InbandGuard = ""
		return c.Run(ctx, opts)
	}
	return code, err
}

// endpoint is the box's SSH endpoint from Lima's ssh.config (with its host key pin file).
func (b *Box) endpoint() (vm.Endpoint, error) {
	return vm.EndpointFromSSHConfig(b.Status.SSHConfig, "lima-"+b.Name)
}
