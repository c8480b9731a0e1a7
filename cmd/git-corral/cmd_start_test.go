package main

import (
	"strings"
	"testing"

	"github.com/git-corral/git-corral/vm"
)

// statusErr is a guest status git corral gave a session (as vm's timeout and signal errors).
type statusErr struct{ code int }

func (e statusErr) Error() string {
	return "guest command timed out after 1s and was stopped (TERM, then KILL)"
}
func (e statusErr) GuestStatus() int { return e.code }

// TestReportGuestStatus: the guest's own exit status passes through silently, as ssh does; a
// status git corral decided (a timeout, a signal) passes through and says why on stderr.
func TestReportGuestStatus(t *testing.T) {
	a, _, stderr := testApp(t, nil)
	if code := a.report(vm.ExitStatus(7)); code != 7 || stderr.Len() != 0 {
		t.Errorf("guest exit 7: code %d, stderr %q; want 7 and nothing said", code, stderr.String())
	}
	if code := a.report(statusErr{124}); code != 124 || !strings.Contains(stderr.String(), "timed out after 1s") {
		t.Errorf("timeout: code %d, stderr %q; want 124 and the reason", code, stderr.String())
	}
}

// TestRedraws: the progress display redraws its line only on a terminal that can take it; with
// TERM=dumb or unset, or off a terminal, it prints one line per phase.
func TestRedraws(t *testing.T) {
	for _, tc := range []struct {
		tty  bool
		term string
		want bool
	}{{true, "xterm-256color", true}, {true, "dumb", false}, {true, "", false}, {false, "xterm", false}} {
		if got := redraws(tc.tty, tc.term); got != tc.want {
			t.Errorf("redraws(%v, %q) = %v, want %v", tc.tty, tc.term, got, tc.want)
		}
	}
}
