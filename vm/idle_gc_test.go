package vm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
)

// TestSessionMarkSurvivesGC: a session that drops end (it holds the box until it exits) keeps
// its lock through garbage collections; the control, end called, releases it.
func TestSessionMarkSurvivesGC(t *testing.T) {
	m := &Manager{Home: home.Home{Dir: filepath.Join(t.TempDir(), "corral")}}
	if _, err := m.BeginSession(context.Background(), "box", time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if !locked(t, m.sessionPath("box")) {
		t.Fatal("the session's mark lost its lock after garbage collection")
	}
	end, err := m.BeginSession(context.Background(), "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	end()
	if locked(t, m.sessionPath("other")) {
		t.Error("control: the mark is still locked after end")
	}
}

// locked reports whether another open file description holds a lock on p.
func locked(t *testing.T, p string) bool {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// TestWatchLockOutlastsProbe: a watcher starting while StopIdle's probe (watched) holds the
// shared lock for a moment still takes its lock; the control, a watcher holding it, makes a
// second one see errLocked.
func TestWatchLockOutlastsProbe(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	m := &Manager{Home: h}
	if err := h.MkdirAll(h.Boxes()); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(h.Boxes(), "b.watch")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(2 * watchLockGap); f.Close() }()
	unlock, err := lockWatch(p)
	if err != nil {
		t.Fatalf("a watcher gave up on a lock held for a moment: %v", err)
	}
	if !m.watched("b") {
		t.Fatal("watched says no watcher while one holds the lock")
	}
	if _, err := lockWatch(p); !errors.Is(err, errLocked) {
		t.Fatalf("second watcher: %v, want errLocked", err)
	}
	unlock()
	if m.watched("b") {
		t.Fatal("watched says a watcher lives after it let go")
	}
}
