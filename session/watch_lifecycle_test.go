package session

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestStopOnExitLastSession: with stop_on_exit, the box stops when its LAST session ends, with no
// other command run: two concurrent sessions, each starting a watcher (the second ends at once:
// one per box); the first session killed (by signal) leaves the box running (control: a session
// is still alive), the second killed stops it, and the stop is audited.
func TestStopOnExitLastSession(t *testing.T) {
	w := newWatchEnv(t)
	a := w.session("0s", true, "forever")
	b := w.session("0s", true, "forever")
	kill(t, a)
	w.stillRunning(time.Second, "while a session was still alive")
	kill(t, b)
	w.waitStopped(15 * time.Second)
	w.waitWatchLog("stopped=true", 15*time.Second)
	w.checkStopRecorded("stop_on_exit")
	if log := w.read(w.watchLog()); !strings.Contains(log, "another watcher watches the box") {
		t.Errorf("watch log %q: the second session's watcher did not end at once", log)
	}
}

// TestStopOnExitSessionDuringStop: a session that begins while the watcher is stopping the box
// (its own watcher ends at once: one per box) is still watched: the box it boots again keeps
// running while it lives (control) and stops when it ends.
func TestStopOnExitSessionDuringStop(t *testing.T) {
	w := newWatchEnv(t)
	w.env = append(w.env, "FAKE_STOP_SLEEP=1")
	a := w.session("0s", true, "forever")
	kill(t, a)
	for start := time.Now(); !strings.Contains(w.read(w.calls), "stop"); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the watcher never began to stop the box")
		}
	}
	b := w.session("0s", true, "forever") // begins while limactl stop runs
	for start := time.Now(); !strings.Contains(w.read(w.calls), "stopped "+w.box); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 15*time.Second {
			t.Fatal("limactl stop never finished")
		}
	}
	w.boot() // what b's Ensure does, once the stop is over
	w.stillRunning(time.Second, "while the second session was alive")
	kill(t, b)
	w.waitStopped(15 * time.Second)
	if n := strings.Count(w.read(w.calls), "stop "+w.box); n != 2 {
		t.Fatalf("%d stops, want 2: one per last session", n)
	}
}

// TestIdleStopByItself: with idle_stop and no stop_on_exit, a box whose session ended keeps
// running until idle_stop has passed since that end (control), then stops by itself, with no
// other command run, after the command that started the watcher ended. A session killed by a
// signal never touches its marker at the end, whose time may be up to a minute old: idle time
// still counts from the end the watcher saw.
func TestIdleStopByItself(t *testing.T) {
	// Each case returns the earliest moment the session may have ended: the watcher counts
	// idle_stop from an end it saw, which can come before the test's own clock reads "ended"
	// (a kill's Wait returns after the watcher has seen the lock go).
	cases := []struct {
		name string
		end  func(w *watchEnv) time.Time
	}{
		{"session ends normally", func(w *watchEnv) time.Time {
			must(t, w.session("1500ms", false, "0s").Wait())
			// The session touched its marker as it ended.
			fi, err := os.Stat(w.h.BoxSessionMark(w.box))
			must(t, err)
			return fi.ModTime()
		}},
		{"session killed, its marker an hour old", func(w *watchEnv) time.Time {
			s := w.session("1500ms", false, "forever")
			old := time.Now().Add(-time.Hour)
			must(t, os.Chtimes(w.h.BoxSessionMark(w.box), old, old))
			time.Sleep(300 * time.Millisecond) // the watcher sees the session alive
			ended := time.Now()
			kill(t, s)
			return ended
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWatchEnv(t)
			ended := c.end(w)
			w.stillRunning(500*time.Millisecond, "before idle_stop passed")
			w.waitStopped(15 * time.Second)
			if d := time.Since(ended); d < 1500*time.Millisecond {
				t.Fatalf("box stopped %v after its session, before idle_stop 1.5s", d)
			}
			w.waitWatchLog("stopped=true", 15*time.Second)
			w.checkStopRecorded("idle_stop 1.5s")
		})
	}
}

// TestBoxWatcherEnds: a watcher never lingers with nothing to do, and never stops a box it should
// not: each case names its state, and whether the watcher must end by itself.
func TestBoxWatcherEnds(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(w *watchEnv)
		ends    bool
		reason  string
		running bool // the box after the watcher
	}{
		{"neither stop_on_exit nor idle_stop", func(w *watchEnv) { must(t, w.session("0s", false, "0s").Wait()) },
			true, "neither stop_on_exit nor idle_stop is set", true},
		{"box not running and no session", func(w *watchEnv) { must(t, w.session("0s", true, "0s").Wait()); w.stopBox() },
			true, "the box is not running", false},
		{"a session still alive", func(w *watchEnv) { w.session("1ms", true, "forever") },
			false, "", true},
		{"idle_stop not yet passed", func(w *watchEnv) { must(t, w.session("1h", false, "0s").Wait()) },
			false, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWatchEnv(t)
			w.noWatcher = true // this test runs the watcher itself
			c.setup(w)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			r, err := Watch(ctx, w.manager(), w.box, 50*time.Millisecond)
			switch {
			case c.ends && (err != nil || r.Stopped || r.Reason != c.reason):
				t.Fatalf("Watch = %+v, %v; want it to end by itself: %q", r, err, c.reason)
			case !c.ends && (!errors.Is(err, context.DeadlineExceeded) || r.Stopped):
				t.Fatalf("Watch = %+v, %v; want it still watching at the deadline", r, err)
			}
			if w.running() != c.running {
				t.Fatalf("box running = %t after the watcher, want %t; limactl calls %q", !c.running, c.running, w.read(w.calls))
			}
		})
	}
}
