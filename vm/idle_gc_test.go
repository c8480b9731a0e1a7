package vm

import (
	"context"
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
