package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/trace"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// defaultConnectionIdle is how long a connection holder waits without a client before it ends.
const defaultConnectionIdle = 15 * time.Minute

func defineConnection(fs *pflag.FlagSet) runFunc {
	idle := fs.Duration("idle", defaultConnectionIdle, "end after this long without a client")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) != 1 || args[0] != "serve" {
			return usageErrorf("connection", "connection takes one verb: serve")
		}
		if *idle <= 0 {
			return usageErrorf("connection", "--idle %v is not a positive duration", *idle)
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		st, err := m.Inspect(box)
		if err != nil {
			return err
		}
		if st.Status != "Running" {
			return withHint(fmt.Errorf("box %s is %s", box, st.Status), "'git corral start' boots it")
		}
		ep, err := vm.EndpointFromSSHConfig(st.SSHConfig, "lima-"+box)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		up, err := vm.Dial(ctx, ep)
		if err != nil {
			return err
		}
		defer up.Close()
		return vm.ServeMux(ctx, up, muxPaths(m.Home, box), vm.MuxOptions{
			Idle: *idle, Sockets: []string{provision.GuardSocketPath},
			WarmShell: a.getenv("CORRAL_NO_WARM_SHELL") != "1",
		})
	}
}

// muxPaths is where the box's connection holder keeps its socket.
func muxPaths(h home.Home, box string) vm.MuxPaths {
	return vm.MuxPaths{Dir: filepath.Join(h.Dir, "run", box)}
}

// dialBox connects to the running box through its connection holder, or directly when none
// answers, and then starts a holder for the next command. A holder is only a faster way to
// the same sshd with the same key: every session still runs the guard check. direct skips the
// holder (agent forwarding: the box opens channels towards the host, which a holder never relays).
func (a *app) dialBox(ctx context.Context, h home.Home, box string, ep vm.Endpoint, direct bool) (*vm.Client, error) {
	if direct || a.getenv("CORRAL_NO_CONNECTION_HOLDER") == "1" {
		return vm.Dial(ctx, ep)
	}
	if c, err := vm.DialMux(ctx, muxPaths(h, box)); err == nil {
		return c, nil
	} else if !errors.Is(err, vm.ErrNoMux) {
		return nil, err
	}
	c, err := vm.Dial(ctx, ep)
	if err != nil {
		return nil, err
	}
	if err := a.startHolder(h, box); err != nil {
		a.notice(fmt.Sprintf("commands keep dialling the box afresh: %v", err))
	}
	return c, nil
}

// startHolder starts "git corral --box BOX connection serve" detached (its own session, no
// terminal, output to the box's connection log) and does not wait for it.
func (a *app) startHolder(h home.Home, box string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start connection holder: %w", err)
	}
	if err := h.MkdirAll(h.Logs()); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(h.Logs(), box+".connection.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("start connection holder: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "--box", box, "connection", "serve")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start connection holder: %w", err)
	}
	return cmd.Process.Release()
}

// guardPrefetch is the guard daemon's report asked early, through the box's connection holder,
// while the host still reads the configuration and renders the guest plan (prefetchGuard).
type guardPrefetch struct {
	box    string
	dialed chan struct{} // closed once c is set, or the holder did not answer
	done   chan struct{} // closed once err is set
	c      *vm.Client    // nil when no holder answered
	err    error         // GuardReport's error, when c is set
}

// prefetchGuard dials box's connection holder and asks the guard daemon for its report in the
// background, so that the report's round trip (two or three through an emulated sshd) overlaps
// the host's own work before the session; session takes both when it runs in that box through
// the holder, and otherwise dials and asks as usual. The report is only read, never acted on
// here: no session's command runs in the box before session has seen it pass.
func (a *app) prefetchGuard(ctx context.Context, box string) {
	if a.getenv("CORRAL_NO_CONNECTION_HOLDER") == "1" {
		return
	}
	if how := a.getenv("CORRAL_GUARD_CHECK"); how != "" && how != "daemon" {
		return
	}
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return
	}
	pf := &guardPrefetch{box: box, dialed: make(chan struct{}), done: make(chan struct{})}
	a.prefetch = pf
	go func() {
		defer close(pf.done)
		done := trace.Step("prefetch: dial the holder")
		c, err := vm.DialMux(ctx, muxPaths(h, box))
		done()
		if err != nil {
			close(pf.dialed)
			return
		}
		pf.c = c
		close(pf.dialed)
		done = trace.Step("prefetch: guard daemon's report")
		_, pf.err = c.GuardReport(ctx, provision.GuardSocketPath)
		done()
	}()
}

// takePrefetch returns the prefetched holder connection for box, or nil, as soon as it is
// dialled; the daemon's report is in err once done is closed.
func (a *app) takePrefetch(box string) *guardPrefetch {
	pf := a.prefetch
	if pf == nil || pf.box != box {
		return nil
	}
	a.prefetch = nil
	<-pf.dialed
	if pf.c == nil {
		return nil
	}
	return pf
}
