package session

import (
	"context"
	"fmt"
	"time"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// BeforeSession is what happens on the way to a session, before the box is booted: the process
// marks the box in use until it ends and starts the box's watcher (watch.go: idle_stop and
// stop_on_exit), stops other boxes idle longer than their idle_stop (a few stat calls when
// nothing is idle), and with snapshot = "auto" takes an automatic snapshot of a stopped box,
// keeping snapshots_keep. Failures here are notices: they never block the session.
func BeforeSession(ctx context.Context, m *vm.Manager, box string, cfg *policy.Config, notice func(string)) {
	markSession(ctx, m, box, cfg, notice)
	boxes, err := m.StopIdle(ctx, time.Now(), cfg.IdleStop, box, false)
	if err != nil {
		notice("idle boxes not checked: " + err.Error())
	}
	for _, b := range boxes {
		if b.Stopped {
			notice(fmt.Sprintf("stopped box %s: idle for %s (idle_stop %s)", b.Box, time.Duration(b.IdleSecs)*time.Second, b.Limit))
		}
	}
	if err := AuditIdleStops(ctx, m, boxes, "a session of box "+box); err != nil {
		notice(err.Error())
	}
	if cfg.Snapshot {
		autoSnapshot(ctx, m, box, cfg, notice)
	}
}

// autoSnapshot takes snapshot = "auto"'s snapshot of a stopped box and prunes old ones.
func autoSnapshot(ctx context.Context, m *vm.Manager, box string, cfg *policy.Config, notice func(string)) {
	unlock, err := m.Lock(ctx, box, func() { notice("waiting for another git corral working on box " + box) })
	if err != nil {
		notice("no snapshot taken: " + err.Error())
		return
	}
	defer unlock()
	st, err := m.Inspect(box)
	switch {
	case err != nil:
		notice("no snapshot taken: " + err.Error())
	case !st.Exists():
		// A new box has nothing to undo yet.
	case st.Status != "Stopped":
		notice("no snapshot taken: box " + box + " is running (snapshots are taken of a stopped box; 'git corral stop' first)")
	default:
		name := vm.AutoSnapshotName(time.Now())
		if err := m.SnapshotCreate(ctx, box, name); err != nil {
			notice("no snapshot taken: " + err.Error())
			return
		}
		notice("snapshot " + name + " taken ('git corral undo' restores it); " + vm.MountNote)
		if _, err := m.PruneAuto(ctx, box, cfg.SnapshotsKeep); err != nil {
			notice("old automatic snapshots not pruned: " + err.Error())
		}
	}
}

// AuditIdleStops records in the sessions log each box of boxes that StopIdle stopped (event
// "stop"; by says who: gc, or the session whose start found it idle), like a watcher's stops.
func AuditIdleStops(ctx context.Context, m *vm.Manager, boxes []vm.IdleBox, by string) error {
	for _, b := range boxes {
		if !b.Stopped {
			continue
		}
		detail := fmt.Sprintf("stopped by %s: idle_stop %s (no session for %s)", by, b.Limit, time.Duration(b.IdleSecs)*time.Second)
		if err := auditStop(ctx, m, b.Box, detail); err != nil {
			return fmt.Errorf("stopped idle box %s, but not audited: %w", b.Box, err)
		}
	}
	return nil
}
