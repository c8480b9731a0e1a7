package gitshadow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchInterval is how often Watch checks everything even without an event (a backstop for
// lost or overflowed events), and FullScanInterval how often it also walks the work tree for
// planted .git entries.
var (
	WatchInterval    = 2 * time.Second
	FullScanInterval = 30 * time.Second
)

// debounce gathers a burst of events (git writes several files per command, a clone dozens)
// into one check: the check runs once no event has come for debounce, and at the latest
// maxDebounce after the burst's first event (a box writing without end cannot put it off). So
// the host's rewrites land after a git command's writes rather than between them, where the
// box's git finds config.lock taken (gitlock.go).
const (
	debounce    = 20 * time.Millisecond
	maxDebounce = 250 * time.Millisecond
)

// protectedNames are the entries of a git dir whose events trigger a check. Names are compared
// with Unicode case folding, because a case-insensitive host filesystem reports the spelling
// the writer used.
var protectedNames = []string{"config", "config.worktree", "commondir", "gitdir", "hooks", "info", "modules", "worktrees"}

// Watch watches the snapshot's git dirs from the host until ctx is done, restoring every change
// at once (as Verify does) and calling onChange for each. It returns nil when ctx ends, or an
// error when the watch cannot be set up. Changes that cannot be restored are reported with
// Restored false; the caller should end the session.
//
// Once Watch has returned it calls onChange no more and checks nothing, but the inotify
// instance is closed in the background: closing one that holds watches waits for the kernel's
// fsnotify SRCU grace period (8-20 ms measured on a loaded host), which would otherwise sit on
// the critical path of every session's end. The caller's final Verify does not need it.
func Watch(ctx context.Context, s *Snapshot, onChange func(Change)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch git metadata: %w", err)
	}
	defer func() { go w.Close() }()
	filters := s.watchSet()
	watched := map[string]bool{}
	addWatches(w, filters, watched)
	tick := time.NewTicker(WatchInterval)
	defer tick.Stop()
	lastFull := time.Now()
	// Anything written between the caller's last check and the watches above existing would
	// raise no event: check once as soon as the watches are in place.
	fire := time.After(0)
	burst := time.Now() // when the first event of the burst fire waits for came
	run := func(full bool) {
		changes, _ := s.check(ctx, full)
		for _, c := range changes {
			onChange(c)
		}
		filters = s.watchSet()
		if addWatches(w, filters, watched) > 0 && fire == nil {
			// A directory watched only now may have been written to before its watch
			// existed: check once more.
			fire = time.After(debounce)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				delete(watched, ev.Name) // its watch is gone; re-add it once the path is back
			}
			if relevant(filters, ev.Name) {
				if fire == nil {
					burst = time.Now()
				}
				wait := min(debounce, maxDebounce-time.Since(burst))
				fire = time.After(max(wait, 0))
			}
		case <-w.Errors:
			run(false) // an overflow loses events: check everything
		case <-fire:
			fire = nil
			run(false)
		case <-tick.C:
			full := time.Since(lastFull) >= FullScanInterval
			if full {
				lastFull = time.Now()
			}
			run(full)
		}
	}
}

// watchSet maps each directory to watch to the names whose events matter in it (nil: all).
func (s *Snapshot) watchSet() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := map[string][]string{}
	addName := func(dir, name string) {
		if names, ok := set[dir]; !ok || names != nil {
			set[dir] = append(set[dir], name)
		}
	}
	for g := range s.GitDirs {
		for _, n := range protectedNames {
			addName(g, n)
		}
		addName(filepath.Dir(g), filepath.Base(g))
		set[filepath.Join(g, "modules")] = nil
		set[filepath.Join(g, "worktrees")] = nil
		for _, d := range pendingGitDirs(g) {
			set[d] = nil
		}
	}
	for t := range s.Trees {
		set[t] = nil
	}
	for p, st := range s.Files {
		if st.Type == "dir" && !s.GitDirs[p] {
			set[p] = nil
		}
		addName(filepath.Dir(p), filepath.Base(p))
	}
	for p := range s.Pins {
		if !s.GitDirs[p] {
			set[p] = nil // a modules/ level: any new entry may be a new git dir
		}
		addName(filepath.Dir(p), filepath.Base(p))
	}
	return set
}

// addWatches adds every existing directory of the set not yet in watched and returns how many
// it added; missing directories are expected and skipped.
func addWatches(w *fsnotify.Watcher, set map[string][]string, watched map[string]bool) int {
	n := 0
	for dir := range set {
		if watched[dir] {
			continue
		}
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && w.Add(dir) == nil {
			watched[dir] = true
			n++
		}
	}
	return n
}

// relevant reports whether an event on path matters.
func relevant(set map[string][]string, path string) bool {
	dir, name := filepath.Dir(path), filepath.Base(path)
	names, ok := set[dir]
	if !ok {
		return true // a directory we watch for its own sake
	}
	if names == nil {
		return true
	}
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// pendingGitDirs returns the directories under g's modules/ and worktrees/ that are not git
// dirs (yet): git clone --separate-git-dir and git worktree add make the directory first and
// write its HEAD later, and a check that looks in between finds no git dir there. Each is
// watched whole until it becomes one, so that the write that makes it a git dir raises the
// event of the check that neutralises it (before, only the next tick of WatchInterval did).
// A nested module name's levels (modules/a/b) are such directories too. Symlinks are not
// followed.
func pendingGitDirs(g string) []string {
	var out []string
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil || depth > 8 {
			return
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if !e.IsDir() || isGitDir(p) {
				continue
			}
			out = append(out, p)
			walk(p, depth+1)
		}
	}
	walk(filepath.Join(g, "modules"), 0)
	wts, _ := os.ReadDir(filepath.Join(g, "worktrees"))
	for _, e := range wts {
		if p := filepath.Join(g, "worktrees", e.Name()); e.IsDir() && !isGitDir(p) {
			out = append(out, p)
		}
	}
	return out
}
