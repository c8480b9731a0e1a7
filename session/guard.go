package session

// The rules of the host-side guard:
//   - The git metadata snapshot is taken while the box is not running (before it boots), so the
//     box never gets a chance to tamper before the record is made. A session on a box that was
//     already running loads that record and first verifies (and restores) against it: whatever
//     the box did between sessions is undone before the next one starts.
//   - While a session runs, a watcher restores every change at once and reports it.
//   - When the session ends, everything is verified again. A change that cannot be restored is
//     an error: the host's git must not be used on the checkout until it is repaired.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/git-corral/git-corral/diff"
	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
)

// StateDir is where a box's git metadata snapshot lives.
func StateDir(h home.Home, box string) string {
	return h.ShadowState(box)
}

// SnapshotBeforeBoot records the plan's metadata for a box that is about to boot.
func SnapshotBeforeBoot(ctx context.Context, h home.Home, box string, plan *gitshadow.Plan) error {
	if _, err := gitshadow.TakeSnapshot(ctx, plan, StateDir(h, box)); err != nil {
		return fmt.Errorf("snapshot git metadata before boot: %w", err)
	}
	return nil
}

// Options describes one session's host-side guard.
type Options struct {
	Project *project.Project
	Home    home.Home
	Box     string
	// Protect enables the git metadata snapshot, watch and verification.
	Protect bool
	// OnChange is told about every change found and what became of it.
	OnChange func(gitshadow.Change)
	// Notice, when set, prints one-line notices (session bases older versions left in the
	// repository's refs were removed).
	Notice func(string)
}

// Guard is the host side of a running session.
type Guard struct {
	// Base is the session base ref git corral diff compares against by default.
	Base string

	snap   *gitshadow.Snapshot
	cancel context.CancelFunc
	done   chan error
	// written waits for the session base's files, written while the session runs
	// (diff.RecordStart); baseErr is its error once End has waited.
	written func() error
	baseErr error
}

// WatchDelay is how long a session runs before the watcher starts (see Begin).
var WatchDelay = 250 * time.Millisecond

// Begin verifies the box's snapshot (restoring what changed since), starts the watcher and
// records the session base: the tree's state is read before Begin returns, its files are
// written while the session runs (End waits for them; BaseError says how it went).
func Begin(ctx context.Context, o Options) (*Guard, error) {
	g := &Guard{}
	if o.Protect {
		snap, err := gitshadow.LoadSnapshot(ctx, StateDir(o.Home, o.Box))
		if err != nil {
			return nil, fmt.Errorf("load the git metadata snapshot of box %s: %w", o.Box, err)
		}
		changes, err := gitshadow.Verify(ctx, snap)
		for _, c := range changes {
			o.OnChange(c)
		}
		if err != nil {
			return nil, fmt.Errorf("git metadata changed since the last session: %w", err)
		}
		g.snap = snap
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		g.cancel, g.done = cancel, make(chan error, 1)
		go func() {
			// A session shorter than WatchDelay is verified at its end only: an inotify
			// instance costs the kernel 10-20 ms to tear down, which every short command
			// (`git corral run -- make -n`) would pay. The watcher's first act is a full
			// check, so nothing written before it starts goes unseen.
			select {
			case <-wctx.Done():
				g.done <- nil
				return
			case <-time.After(WatchDelay):
			}
			g.done <- gitshadow.Watch(wctx, snap, o.OnChange)
		}()
	}
	rec, written, err := diff.RecordStart(ctx, o.Project, o.Box, diff.BaseOptions{Home: o.Home.Dir})
	if err != nil {
		g.stopWatch()
		return nil, err
	}
	if rec.Notice != "" && o.Notice != nil {
		o.Notice(rec.Notice)
	}
	g.Base, g.written = rec.Path, written
	return g, nil
}

// BaseError is the error of writing the session base's files, known once End returned: the
// base Base names is then missing, and 'git corral diff' compares against the one before.
func (g *Guard) BaseError() error { return g.baseErr }

func (g *Guard) stopWatch() error {
	if g.cancel == nil {
		return nil
	}
	g.cancel()
	err := <-g.done
	g.cancel = nil
	return err
}

// End stops the watcher and verifies everything once more, reporting each change to onChange;
// it returns once the session base is written too.
func (g *Guard) End(ctx context.Context, onChange func(gitshadow.Change)) error {
	if g.written != nil {
		g.baseErr, g.written = g.written(), nil
	}
	if g.snap == nil {
		return nil
	}
	werr := g.stopWatch()
	changes, err := gitshadow.Verify(ctx, g.snap)
	for _, c := range changes {
		onChange(c)
	}
	if werr != nil {
		err = errors.Join(err, fmt.Errorf("watch git metadata: %w", werr))
	}
	return err
}
