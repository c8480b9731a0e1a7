package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/lima-vm/lima/pkg/store"
)

// A session marker, $CORRAL_HOME/boxes/<box>.session, tells gc whether a box is in use and
// since when it is idle: every session process holds a shared flock on it for its whole life
// (the kernel drops it when the process ends) and refreshes its mtime every minute, so its
// mtime is the last time a session was alive, within a minute. It also records the idle_stop
// that applied to the box's last session.

// sessionTouch is how often a live session refreshes its marker.
const sessionTouch = time.Minute

// sessionMark is what a marker file holds.
type sessionMark struct {
	IdleStop string `json:"idleStop"`
	// StopOnExit is stop_on_exit of the box's last session (watch.go).
	StopOnExit bool `json:"stopOnExit,omitempty"`
}

func (m *Manager) sessionPath(box string) string {
	return m.Home.BoxSessionMark(box)
}

// BeginSession marks box as in use until the process exits (or end is called), with idleStop
// as the box's idle limit for gc.
func (m *Manager) BeginSession(ctx context.Context, box string, idleStop time.Duration) (end func(), err error) {
	return m.beginSession(ctx, box, sessionMark{IdleStop: idleStop.String()})
}

// beginSession is BeginSession recording mark.
func (m *Manager) beginSession(ctx context.Context, box string, mark sessionMark) (end func(), err error) {
	p := m.sessionPath(box)
	if err := m.Home.MkdirAll(filepath.Dir(p)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open session marker %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock session marker %s: %w", p, err)
	}
	b, _ := json.Marshal(mark)
	_ = f.Truncate(0)
	_, _ = f.WriteAt(append(b, '\n'), 0)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(sessionTouch)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				_ = os.Chtimes(p, now, now)
			}
		}
	}()
	// The lock lives as long as f is open. A caller that never calls end (the session holds the
	// box until its process exits) drops its only reference to f: without this one, the
	// garbage collector would close f, and with it the lock, in the middle of a long session
	// (seen on a real box: a box's first session, six minutes of creation, lost its mark and
	// stop_on_exit's watcher left, e2e TestKeysLifecycle).
	heldMarks.Store(f, true)
	return func() {
		close(stop)
		now := time.Now()
		_ = os.Chtimes(p, now, now)
		heldMarks.Delete(f)
		f.Close()
	}, nil
}

// heldMarks keeps every open session marker reachable (beginSession).
var heldMarks sync.Map

// IdleBox is a running box gc found idle.
type IdleBox struct {
	Box      string        `json:"box"`
	Idle     time.Duration `json:"-"`
	IdleSecs int64         `json:"idleSeconds"`
	Limit    string        `json:"idleStop"`
	Stopped  bool          `json:"stopped"`
	Error    string        `json:"error,omitempty"`
}

// IdleBoxes returns the running boxes with no live session whose last session ended longer ago
// than their idle_stop (or fallback, for a box that never recorded one). A limit of 0 never
// stops. It only reads Lima's store and stats files: cheap enough for every launch.
func (m *Manager) IdleBoxes(now time.Time, fallback time.Duration) ([]IdleBox, error) {
	names, err := store.Instances()
	if err != nil {
		return nil, fmt.Errorf("list boxes: %w", err)
	}
	var out []IdleBox
	for _, n := range names {
		st, err := m.Inspect(n)
		if err != nil || st.Status != store.StatusRunning {
			continue
		}
		since, limit, busy := m.lastSession(n, fallback)
		if busy || limit <= 0 || since.IsZero() || m.watched(n) {
			continue
		}
		if idle := now.Sub(since); idle >= limit {
			out = append(out, IdleBox{Box: n, Idle: idle, IdleSecs: int64(idle.Seconds()), Limit: limit.String()})
		}
	}
	return out, nil
}

// watched reports whether box's lifecycle watcher (watch.go) is alive: it holds the box's
// .watch lock for its life. A watched box is the watcher's to stop: it counts the idle time
// from the poll that first saw no session, while the marker's mtime may be up to a minute
// (sessionTouch) older than the end of a session that never touched it at its end (one that
// exits without calling end, or by a signal). Counting from the mtime, another command's
// StopIdle stopped a box 9 s after its session under idle_stop 20s (CI, TestKeysLifecycle).
// The probe takes a shared lock for a moment; a watcher starting in that moment retries
// (lockWatch) rather than leaving.
func (m *Manager) watched(box string) bool {
	f, err := os.OpenFile(filepath.Join(m.Home.Boxes(), box+".watch"), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// lastSession reads box's marker: when a session was last alive, its idle limit, and whether a
// session holds it now. Without a marker the box's start time (its ha.pid) counts.
func (m *Manager) lastSession(box string, fallback time.Duration) (since time.Time, limit time.Duration, busy bool) {
	s := m.readSession(box, fallback)
	return s.since, s.limit, s.busy
}

// sessionState is what a box's marker says (lastSession).
type sessionState struct {
	since      time.Time
	limit      time.Duration
	stopOnExit bool
	busy       bool
}

// readSession is lastSession with the marker's stop_on_exit.
func (m *Manager) readSession(box string, fallback time.Duration) sessionState {
	p := m.sessionPath(box)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if fi, err := os.Stat(filepath.Join(m.Home.LimaHome(), box, "ha.pid")); err == nil {
			return sessionState{since: fi.ModTime(), limit: fallback}
		}
		return sessionState{limit: fallback}
	}
	if err != nil {
		return sessionState{}
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return sessionState{busy: true}
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	s := sessionState{limit: fallback}
	var mark sessionMark
	b := make([]byte, 256)
	n, _ := f.Read(b)
	if json.Unmarshal(b[:n], &mark) == nil {
		if d, err := time.ParseDuration(mark.IdleStop); err == nil {
			s.limit = d
		}
		s.stopOnExit = mark.StopOnExit
	}
	fi, err := f.Stat()
	if err != nil {
		return sessionState{}
	}
	s.since = fi.ModTime()
	return s
}

// StopIdle stops every idle box (see IdleBoxes) except skip, each under its box lock and only if
// it is still idle then. dryRun only reports.
func (m *Manager) StopIdle(ctx context.Context, now time.Time, fallback time.Duration, skip string, dryRun bool) ([]IdleBox, error) {
	idle, err := m.IdleBoxes(now, fallback)
	if err != nil {
		return nil, err
	}
	var out []IdleBox
	for _, b := range idle {
		if b.Box == skip {
			continue
		}
		if !dryRun {
			b.Stopped, b.Error = m.stopIfIdle(ctx, b.Box, fallback)
		}
		out = append(out, b)
	}
	return out, nil
}

// Why stopIfIdle did not stop a box that may stop at the next try.
const (
	errBusy         = "box is busy (locked by another git corral)"
	errSessionBegan = "a session began"
)

// stopIfIdle takes the box lock without waiting and stops the box if it is still idle.
func (m *Manager) stopIfIdle(ctx context.Context, box string, fallback time.Duration) (bool, string) {
	lctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	unlock, err := m.Lock(lctx, box, nil)
	if err != nil {
		return false, errBusy
	}
	defer unlock()
	if _, _, busy := m.lastSession(box, fallback); busy {
		return false, errSessionBegan
	}
	if err := m.Stop(ctx, box); err != nil {
		return false, err.Error()
	}
	return true, ""
}
