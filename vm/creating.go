package vm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Box creation is all-or-nothing. The rules:
//
//   - A box's metadata is written with State StateCreating BEFORE `limactl create`, and marked
//     ready ("") only once the new box first reached READY (provisioned, every guest guard
//     applied). The box lock is held from before the marker until after it is cleared.
//   - SIGINT, SIGTERM or SIGHUP during creation (copying the image, building the golden base,
//     the first boot and its provisioning) cancel it at once: limactl is ended and the half box
//     is deleted before git corral exits.
//   - SIGKILL (or a crash, or a power cut) cannot be caught: the next command that takes the
//     box's lock (so no live creator holds it) and finds the marker deletes the half box with a
//     notice, then creates the box afresh, instead of booting it without the guards'
//     bookkeeping.
//   - A Lima instance with no corral metadata at all is refused with a hint, not deleted: this
//     git corral never makes one (the marker comes first), so it is an older version's
//     interrupted creation or a box whose metadata was removed, and a clone-mode box's disk
//     holds the only copy of its work.

// StateCreating is Meta.State while a box is being created.
const StateCreating = "creating"

// ErrNoMeta is returned for a box that has a Lima instance but no corral metadata.
var ErrNoMeta = errors.New("box has no git corral metadata")

// halfCleanupTimeout bounds the deletion of a half-made box after an interrupt.
const halfCleanupTimeout = 2 * time.Minute

// sweepHalf deletes spec's box when its creation never finished (StateCreating), and refuses a
// box with no metadata. It returns the box's state afterwards. The caller holds the box lock.
func (m *Manager) sweepHalf(ctx context.Context, spec BoxSpec, st Status) (Status, error) {
	if !st.Exists() {
		return st, nil
	}
	meta, err := m.ReadMeta(spec.Box)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, fmt.Errorf("%w: box %s has a Lima instance (%s) but no %s: it was not made by this git corral, "+
			"or its creation was interrupted before creations were recorded; 'git corral delete --yes' removes it",
			ErrNoMeta, spec.Box, st.Status, m.Home.BoxMeta(spec.Box))
	case err != nil || meta.State != StateCreating:
		return st, nil // an unreadable file is left to checkMountMode and the session's checks
	}
	if spec.Notice != nil {
		spec.Notice(fmt.Sprintf("box %s was left half-created by an interrupted git corral (created %s, never ready): removing it",
			spec.Box, meta.Created.Format(time.RFC3339)))
	}
	if err := m.removeHalf(ctx, spec.Box); err != nil {
		return st, fmt.Errorf("remove half-created box %s: %w", spec.Box, err)
	}
	return Status{Name: spec.Box}, nil
}

// createBox creates spec's box and boots it for the first time, all or nothing: on any failure,
// and on SIGINT, SIGTERM or SIGHUP, the half box is deleted before it returns.
func (m *Manager) createBox(ctx context.Context, spec BoxSpec) error {
	// The question comes before the signals are caught: Ctrl-C at "Create box…?" ends git
	// corral as it always does, with nothing made.
	if _, err := m.askCreate(spec); err != nil {
		return err
	}
	spec.Confirm = nil
	ctx, cause, stop := interruptible(ctx)
	defer stop()
	err := m.create(ctx, spec)
	if err == nil {
		err = m.Start(ctx, spec.Box, spec.Progress)
		spec.Progress.Done("box "+spec.Box, err)
	}
	if err == nil {
		err = m.markReady(spec.Box)
	}
	if meta, merr := m.ReadMeta(spec.Box); err == nil || merr != nil || meta.State != StateCreating {
		return err // done, or refused before anything was made (declined, no image, no template)
	}
	if c := cause(); c != nil {
		err = c
	}
	clean, cancel := context.WithTimeout(context.WithoutCancel(ctx), halfCleanupTimeout)
	defer cancel()
	m.keepConsole(spec.Box)
	if derr := m.removeHalf(clean, spec.Box); derr != nil {
		return fmt.Errorf("create box %s: %w; removing the half-created box failed too (%v): 'git corral delete --yes' removes it", spec.Box, err, derr)
	}
	return fmt.Errorf("create box %s: %w; the half-created box was removed", spec.Box, err)
}

// ErrInterrupted is the cause of a creation ended by a signal.
var ErrInterrupted = errors.New("interrupted")

// interruptible returns ctx cancelled at SIGINT, SIGTERM or SIGHUP, the signal's error once one
// came, and stop, which restores the signals' default handling.
func interruptible(ctx context.Context) (context.Context, func() error, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(fmt.Errorf("%w by %v", ErrInterrupted, s))
		case <-done:
		}
	}()
	cause := func() error {
		if c := context.Cause(ctx); errors.Is(c, ErrInterrupted) {
			return c
		}
		return nil
	}
	return ctx, cause, func() { signal.Stop(ch); close(done); cancel(nil) }
}

// markReady clears the creating marker of box's metadata.
func (m *Manager) markReady(box string) error {
	meta, err := m.ReadMeta(box)
	if err != nil {
		return err
	}
	meta.State = ""
	return m.WriteMeta(meta)
}

// removeHalf deletes a half-created box: its Lima instance when there is one (the creator may
// have died before `limactl create` made it), then its metadata and template.
func (m *Manager) removeHalf(ctx context.Context, box string) error {
	st, err := m.Inspect(box)
	if err != nil || st.Exists() {
		return m.Delete(ctx, box)
	}
	for _, p := range []string{m.Home.BoxMeta(box), m.Home.BoxTemplate(box)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove half-created box %q: %w", box, err)
		}
	}
	return nil
}
