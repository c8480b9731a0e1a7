package vm

// This file is the box's lifecycle watcher: the host-side process that stops a box when its
// last session ends (stop_on_exit) or when it has been idle longer than idle_stop, with no
// other git corral command run. Every session starts one ("git corral --box BOX watch",
// detached: its own session, no terminal), so it outlives the command that started it. Rules:
//   - One watcher per box: it holds $CORRAL_HOME/boxes/<box>.watch (flock) for its life; a
//     second one returns at once.
//   - It reads the box's session marker (idle.go) at every poll: sessions hold a shared flock
//     on it for their whole life and the kernel drops it when their process ends, by signal
//     too. "The last session ended" is "nobody holds the marker any more", so with several
//     concurrent sessions only the last one's end stops the box.
//   - It never outlives its purpose: it returns once no session holds the marker and the box
//     is not running (so after a stop, unless a session began meanwhile: that one is watched
//     on), or once the last session's configuration asks for neither stop.
//   - It stops the box only under the box lock and only if no session began meanwhile
//     (stopIfIdle); a busy lock is tried again at the next poll.
// A user timer (systemd, launchd) was the other way: it needs a user session manager, which
// neither CI nor a root-run runuser has, and a second mechanism on macOS; a process does both.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// WatchPoll is how often a watcher reads the session marker and the box's state: the bound on
// how late after the last session (or idle_stop) the stop begins.
const WatchPoll = 2 * time.Second

// WatchResult says why a watcher ended.
type WatchResult struct {
	// Stopped is true when the watcher stopped the box.
	Stopped bool
	// Reason is why: "stop_on_exit", "idle_stop 30m0s", or why it had nothing to do.
	Reason string
	// Idle is how long the box had been without a session when it was stopped.
	Idle time.Duration
}

// BeginSessionLimits is BeginSession recording stop_on_exit too, for the box's watcher.
func (m *Manager) BeginSessionLimits(ctx context.Context, box string, idleStop time.Duration, stopOnExit bool) (end func(), err error) {
	return m.beginSession(ctx, box, sessionMark{IdleStop: idleStop.String(), StopOnExit: stopOnExit})
}

// Watch is the box's watcher (see the file's rules): it polls every poll (WatchPoll when 0),
// calls onStop after each stop it makes, and returns once no session holds the box and the box
// does not run (or nothing is asked), or when ctx ends. The returned result's Stopped says
// whether it stopped the box at all. A session that begins while the box stops keeps this
// watcher (its own ended at once on the lock): the watcher ends only after releasing the lock
// and seeing no session.
func (m *Manager) Watch(ctx context.Context, box string, poll time.Duration, onStop func(WatchResult)) (WatchResult, error) {
	if poll <= 0 {
		poll = WatchPoll
	}
	if err := m.Home.MkdirAll(m.Home.Boxes()); err != nil {
		return WatchResult{}, err
	}
	lock := filepath.Join(m.Home.Boxes(), box+".watch")
	unlock, err := lockWatch(lock)
	if errors.Is(err, errLocked) {
		return WatchResult{Reason: "another watcher watches the box"}, nil
	}
	if err != nil {
		return WatchResult{}, fmt.Errorf("watch box %q: %w", box, err)
	}
	defer func() { unlock() }()
	t := time.NewTicker(poll)
	defer t.Stop()
	// Only a session starts a watcher: one was alive when it started, even if it ended before
	// the first poll.
	seen, stopped := watchSeen{busy: true, at: time.Now()}, false
	for {
		r, done := m.watchOnce(ctx, box, &seen)
		if r.Stopped {
			stopped, done = true, false
			if onStop != nil {
				onStop(r)
			}
		}
		if done {
			unlock()
			unlock = func() {}
			if !m.readSession(box, 0).busy {
				r.Stopped = stopped
				return r, nil
			}
			if unlock, err = lockWatch(lock); err != nil {
				return WatchResult{Stopped: stopped, Reason: "another watcher took over"}, nil
			}
		}
		select {
		case <-ctx.Done():
			return WatchResult{Stopped: stopped, Reason: "told to end"}, ctx.Err()
		case <-t.C:
		}
	}
}

// watchLockTries is how many times, watchLockGap apart, a watcher tries its lock before it
// takes a holder for another watcher: StopIdle's probe (Manager.watched) holds it for a moment.
const (
	watchLockTries = 5
	watchLockGap   = 20 * time.Millisecond
)

// lockWatch takes a watcher's lock (lockExclusive), trying again while something holds it
// for a moment.
func lockWatch(path string) (unlock func(), err error) {
	for i := 0; ; i++ {
		unlock, err = lockExclusive(path)
		if !errors.Is(err, errLocked) || i+1 >= watchLockTries {
			return unlock, err
		}
		time.Sleep(watchLockGap)
	}
}

// watchSeen is what the watcher saw at its last poll: whether a session held the marker, and
// when the box was last known busy.
type watchSeen struct {
	busy bool
	at   time.Time
}

// watchOnce is one poll: done is true when the watcher should end, with why. A session that
// ends by a signal never touches the marker at its end, and its mtime may be up to a minute
// (sessionTouch) older: the idle time then counts from the first poll that saw no session
// after one that saw it (the end lies between the two; counting from the later one never
// stops a box before idle_stop has passed since the session's end).
func (m *Manager) watchOnce(ctx context.Context, box string, seen *watchSeen) (WatchResult, bool) {
	s := m.readSession(box, 0)
	if s.busy {
		*seen = watchSeen{busy: true}
		return WatchResult{}, false
	}
	if seen.busy {
		*seen = watchSeen{at: time.Now()}
	}
	if seen.at.After(s.since) {
		s.since = seen.at
	}
	st, err := m.Inspect(box)
	if err != nil || st.Status != "Running" {
		return WatchResult{Reason: "the box is not running"}, true
	}
	reason := ""
	idle := time.Since(s.since)
	switch {
	case s.stopOnExit:
		reason = "stop_on_exit"
	case s.limit <= 0:
		return WatchResult{Reason: "neither stop_on_exit nor idle_stop is set"}, true
	case s.since.IsZero() || idle < s.limit:
		return WatchResult{}, false
	default:
		reason = "idle_stop " + s.limit.String()
	}
	stopped, why := m.stopIfIdle(ctx, box, 0)
	switch {
	case stopped:
	case why == errBusy || why == errSessionBegan:
		return WatchResult{}, false // look again at the next poll
	default:
		return WatchResult{Reason: reason + ": stop failed: " + why}, true
	}
	return WatchResult{Stopped: true, Reason: reason, Idle: idle}, true
}
