package dashboard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/vm"
)

// StateAbsent is the state of a box with metadata but no Lima instance.
const StateAbsent = "absent"

// Loader reads the boxes of one $CORRAL_HOME.
type Loader struct {
	// Home is git corral's state directory.
	Home home.Home
	// Inspect returns a box's Lima state (vm.Manager.Inspect); a box it does not know is absent.
	Inspect func(box string) (vm.Status, error)
	// Instances lists the Lima instances, so a box without metadata is shown too; may be nil.
	Instances func() ([]string, error)
	// ReadEgress reads a box's egress log and its rotated predecessor, oldest first, and counts
	// the lines that are not entries (the egress command's reader).
	ReadEgress func(path string) ([]broker.Entry, int, error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	cache egressCache
}

// Box is one row of the dashboard.
type Box struct {
	Name    string
	State   string
	Network string
	Project string
	// Session is "live" while a session holds the box's session mark, "none" otherwise.
	Session string
	// Idle is how long ago the last session ended, for a running box without a live session.
	Idle time.Duration
	// Denials counts the refused connection attempts in the box's egress log.
	Denials int
	// LastDenial is the newest of them, when there is one.
	LastDenial *broker.Entry
	// Problem says what could not be read about the box, if anything.
	Problem string
}

// Snapshot is everything the dashboard shows at one moment.
type Snapshot struct {
	Taken time.Time
	Boxes []Box
	// Recent are the newest denials of every box, newest last.
	Recent []broker.Entry
}

// recentDenials is how many denials across all boxes a snapshot keeps.
const recentDenials = 8

// Load reads every box. A box whose files cannot be read is still listed, with its problem.
func (l *Loader) Load() (Snapshot, error) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	names, err := l.names()
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Taken: now()}
	var denials []broker.Entry
	for _, n := range names {
		b, d := l.box(n, snap.Taken)
		snap.Boxes = append(snap.Boxes, b)
		denials = append(denials, d...)
	}
	sort.SliceStable(denials, func(i, j int) bool { return denials[i].Time.Before(denials[j].Time) })
	if len(denials) > recentDenials {
		denials = denials[len(denials)-recentDenials:]
	}
	snap.Recent = denials
	return snap, nil
}

// names lists the boxes: every metadata file in $CORRAL_HOME/boxes and every Lima instance.
func (l *Loader) names() ([]string, error) {
	seen := map[string]bool{}
	ents, err := os.ReadDir(l.Home.Boxes())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list boxes in %s: %w", l.Home.Boxes(), err)
	}
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && n != "" && e.Type().IsRegular() {
			seen[n] = true
		}
	}
	if l.Instances != nil {
		inst, err := l.Instances()
		if err != nil {
			return nil, err
		}
		for _, n := range inst {
			seen[n] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// box reads one box's row and its denials.
func (l *Loader) box(name string, now time.Time) (Box, []broker.Entry) {
	b := Box{Name: name, State: StateAbsent, Session: "none"}
	var problems []string
	if meta, err := (&vm.Manager{Home: l.Home}).ReadMeta(name); err == nil {
		b.Network, b.Project = meta.Network, meta.Project
	} else if !errors.Is(err, fs.ErrNotExist) {
		problems = append(problems, err.Error())
	}
	if l.Inspect != nil {
		st, err := l.Inspect(name)
		switch {
		case err != nil:
			b.State = "unknown"
			problems = append(problems, err.Error())
		case st.Exists():
			b.State = st.Status
		}
	}
	since, live := l.session(name)
	if live {
		b.Session = "live"
	} else if b.State == "Running" && !since.IsZero() {
		b.Idle = now.Sub(since).Truncate(time.Second)
	}
	var denials []broker.Entry
	if l.ReadEgress != nil {
		entries, err := l.cache.read(l.Home.EgressLog(name), l.ReadEgress)
		if err != nil {
			problems = append(problems, err.Error())
		}
		for _, e := range entries {
			if e.Decision == broker.Deny {
				e.Box = name
				denials = append(denials, e)
			}
		}
	}
	b.Denials = len(denials)
	if len(denials) > 0 {
		last := denials[len(denials)-1]
		b.LastDenial = &last
	}
	b.Problem = strings.Join(problems, "; ")
	return b, denials
}

// session reads the box's session mark as gc does (vm/idle.go): a live session holds a shared
// lock on it, and its mtime is when a session was last alive; without a mark, the box's start
// (Lima's ha.pid) counts. The exclusive lock is only tried, never waited for.
func (l *Loader) session(box string) (since time.Time, live bool) {
	f, err := os.OpenFile(l.Home.BoxSessionMark(box), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if fi, err := os.Stat(filepath.Join(l.Home.LimaHome(), box, "ha.pid")); err == nil {
			return fi.ModTime(), false
		}
		return time.Time{}, false
	}
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return time.Time{}, true
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime(), false
}

// Decisions returns the newest n entries of a box's egress log, allowed and refused, newest last.
func (l *Loader) Decisions(box string, n int) ([]broker.Entry, error) {
	if l.ReadEgress == nil {
		return nil, nil
	}
	entries, err := l.cache.read(l.Home.EgressLog(box), l.ReadEgress)
	if err != nil {
		return nil, err
	}
	if len(entries) > n {
		entries = entries[len(entries)-n:]
	}
	return entries, nil
}
