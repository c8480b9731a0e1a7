package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/trace"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// dial connects to the running box through its connection holder, or directly when none
// answers, and then starts a holder for the next command. A holder is only a faster way to
// the same sshd with the same key: every session still runs the guard check. direct skips the
// holder (agent forwarding: the box opens channels towards the host, which a holder never relays).
func (b *Box) dial(ctx context.Context, ep vm.Endpoint, direct bool) (*vm.Client, error) {
	if direct || b.req.getenv("CORRAL_NO_CONNECTION_HOLDER") == "1" {
		b.early.drop()
		return vm.Dial(ctx, ep)
	}
	h := b.Manager.Home
	if c, err := vm.DialMux(ctx, vm.HolderPaths(h, b.Name)); err == nil {
		b.early.drop()
		return c, nil
	} else if !errors.Is(err, vm.ErrNoMux) {
		b.early.drop()
		return nil, err
	}
	c := b.takeEarly(ctx, ep)
	if c == nil {
		var err error
		if c, err = vm.Dial(ctx, ep); err != nil {
			return nil, err
		}
	}
	if err := startHolder(h, b.Name); err != nil {
		b.req.notice(fmt.Sprintf("commands keep dialling the box afresh: %v", err))
	}
	return c, nil
}

// startHolder starts "git corral --box BOX connection serve" detached (its own session, no
// terminal, output to the box's connection log) and does not wait for it.
func startHolder(h home.Home, box string) error {
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
	dialed chan struct{} // closed once c is set, or the holder did not answer
	done   chan struct{} // closed once err is set
	c      *vm.Client    // nil when no holder answered
	ans    daemonAnswer  // GuardReport's, when c is set
}

// prefetchGuard dials box's connection holder and asks the guard daemon for its report in the
// background, so that the report's round trip (two or three through an emulated sshd) overlaps
// the host's own work before the session; Run takes both when it runs in that box through the
// holder, and otherwise dials and asks as usual. The report is only read, never acted on here:
// no session's command runs in the box before Run has seen it pass. It returns nil when the
// holder or the daemon is not to be used.
func prefetchGuard(ctx context.Context, req *Request, h home.Home, box string) *guardPrefetch {
	if req.getenv("CORRAL_NO_CONNECTION_HOLDER") == "1" {
		return nil
	}
	if how := req.getenv("CORRAL_GUARD_CHECK"); how != "" && how != "daemon" {
		return nil
	}
	pf := &guardPrefetch{dialed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pf.done)
		done := trace.Step("prefetch: dial the holder")
		c, err := vm.DialMux(ctx, vm.HolderPaths(h, box))
		done()
		if err != nil {
			close(pf.dialed)
			return
		}
		pf.c = c
		close(pf.dialed)
		done = trace.Step("prefetch: guard daemon's report")
		pf.ans.out, pf.ans.err = c.GuardReport(ctx, provision.GuardSocketPath)
		done()
	}()
	return pf
}

// drop lets pf go: its connection is closed once its report is in. pf may be nil.
func (pf *guardPrefetch) drop() {
	if pf == nil {
		return
	}
	go func() {
		if <-pf.done; pf.c != nil {
			pf.c.Close()
		}
	}()
}

// guessBox is the box of the work tree git will most likely name for dir: the nearest directory
// at or above dir (symbolic links resolved) that holds a ".git", or "" when none does. It costs
// a few stat calls against git's process start (8.6 ms of a 180 ms warm command), so the
// guard daemon's report can be asked for while git runs. It is only a guess: GIT_DIR,
// GIT_WORK_TREE, core.worktree or a safe.directory refusal can make git's answer another, and
// Open uses the early report only when git names the same box (the same holder, the same box).
func guessBox(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if d, err = filepath.EvalSymlinks(d); err != nil {
		return ""
	}
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return project.BoxName(d)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// takePrefetch returns the prefetched holder connection, or nil, as soon as it is dialled; the
// daemon's answer is in ans once done is closed. It is taken once.
func (b *Box) takePrefetch() *guardPrefetch {
	pf := b.prefetch
	if pf == nil {
		return nil
	}
	b.prefetch = nil
	<-pf.dialed
	if pf.c == nil {
		return nil
	}
	return pf
}

// earlyConn is a connection to a starting box, dialled while Lima waits for its last boot step
// (the "provisioning" phase: Lima's SSH requirements are met, the guest's boot scripts are
// finishing). The first session of a new or restarted box then finds its connection made: the
// dial under software emulation (key exchange, authentication) is 0.4 s. Nothing runs in the
// box through it before that session's guard check, which comes after the box is ready, as
// through any other connection.
type earlyConn struct {
	fired atomic.Bool   // the phase began and the dial started
	done  chan struct{} // closed when the dial ended (only once fired)
	ep    vm.Endpoint
	c     *vm.Client
	err   error
}

// dialEarly has b's connection dialled when p enters the "provisioning" phase. It returns nil
// when there is no progress to follow.
func (b *Box) dialEarly(ctx context.Context, p *vm.Progress) *earlyConn {
	if p == nil {
		return nil
	}
	e := &earlyConn{done: make(chan struct{})}
	var hook func()
	hook = func() {
		// The phase may be a golden build box's, before b's own instance exists: then the
		// hook waits for the next one.
		st, err := b.Manager.Inspect(b.Name)
		if err != nil || st.Status != "Running" {
			p.OnPhase(vm.PhaseProvisioning, hook)
			return
		}
		e.fired.Store(true)
		defer close(e.done)
		done := trace.Step("early dial (while Lima waits for the boot's end)")
		defer done()
		if e.ep, e.err = vm.EndpointFromSSHConfig(st.SSHConfig, "lima-"+b.Name); e.err != nil {
			return
		}
		e.c, e.err = vm.Dial(ctx, e.ep)
	}
	p.OnPhase(vm.PhaseProvisioning, hook)
	return e
}

// takeEarly returns the early connection when it was dialled to ep and still answers, or nil
// (and closes one that was not or does not). It is taken once. A boot's scripts ran after the
// dial: the privilege drop ends the box user's processes that hold a group it removes, which
// can be this connection's.
func (b *Box) takeEarly(ctx context.Context, ep vm.Endpoint) *vm.Client {
	e := b.early
	b.early = nil
	if e == nil || !e.fired.Load() {
		return nil
	}
	<-e.done
	if e.err != nil || e.c == nil {
		return nil
	}
	if e.ep != ep {
		e.c.Close()
		return nil
	}
	done := trace.Step("early connection: still answering")
	err := e.c.Alive(ctx, 2*time.Second)
	done()
	if err != nil {
		e.c.Close()
		return nil
	}
	return e.c
}

// drop closes the early connection, if one was dialled. e may be nil.
func (e *earlyConn) drop() {
	if e == nil || !e.fired.Load() {
		return
	}
	go func() {
		if <-e.done; e.c != nil {
			e.c.Close()
		}
	}()
}
