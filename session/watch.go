package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// markSession marks box in use until this process ends (for idle_stop and stop_on_exit) and
// starts its watcher. Failures are notices: they never block the session.
func markSession(ctx context.Context, m *vm.Manager, box string, cfg *policy.Config, notice func(string)) {
	if _, err := m.BeginSessionLimits(ctx, box, cfg.IdleStop, cfg.StopOnExit); err != nil {
		notice("idle tracking off for this session: " + err.Error())
	} else if err := StartWatcher(m.Home, box, cfg); err != nil {
		notice("the box will not stop by itself (stop_on_exit, idle_stop): " + err.Error())
	}
}

// StartWatcher starts box's lifecycle watcher ("git corral --box BOX watch", vm/watch.go)
// detached, when cfg asks for stop_on_exit or an idle_stop: its own session, no terminal,
// output to the box's watch log, so that it outlives this command. A watcher already watching
// the box makes the new one end at once. The caller has marked the session (BeginSession), so
// the watcher waits for it.
func StartWatcher(h home.Home, box string, cfg *policy.Config) error {
	if !cfg.StopOnExit && cfg.IdleStop <= 0 {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start box watcher: %w", err)
	}
	if err := h.MkdirAll(h.Logs()); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(h.Logs(), box+".watch.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("start box watcher: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "--box", box, "watch")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start box watcher: %w", err)
	}
	return cmd.Process.Release()
}

// Watch runs box's watcher (vm.Manager.Watch) until it has nothing left to do, and records
// each stop it makes in the audit log (event "stop", the reason in its detail).
func Watch(ctx context.Context, m *vm.Manager, box string, poll time.Duration) (vm.WatchResult, error) {
	var auditErr error
	r, err := m.Watch(ctx, box, poll, func(r vm.WatchResult) {
		detail := fmt.Sprintf("stopped by its watcher: %s (no session for %s)", r.Reason, r.Idle.Round(time.Second))
		if err := auditStop(ctx, m, box, detail); err != nil {
			auditErr = fmt.Errorf("watch box %q: stopped, but not audited: %w", box, err)
		}
	})
	if err == nil {
		err = auditErr
	}
	return r, err
}

// auditStop records a stop of box, made by something other than a session's own command (its
// watcher, gc, another session's start), with detail saying who and why.
func auditStop(ctx context.Context, m *vm.Manager, box, detail string) error {
	meta, _ := m.ReadMeta(box)
	rec := audit.Record{Event: audit.EventStop, Box: box, Project: meta.Project, Network: meta.Network, Detail: detail}
	return AuditLog(m.Home).Append(context.WithoutCancel(ctx), rec)
}
