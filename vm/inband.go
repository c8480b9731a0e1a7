package vm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/git-corral/git-corral/provision"
)

// ErrNoInbandReport is returned by Run with InbandGuard, with the guest's exit status, when the
// session ended without the session check's report line; no input was sent. A box rendered
// before the in-band check existed has no session check to source: the prefix then exits
// provision.InbandNoCheckExit before anything else runs, and the caller runs the separate
// guard check (CheckGuards) instead. Any other status is a guest that did not follow the
// protocol: the command may have run, and must not be run again.
var ErrNoInbandReport = errors.New("the in-band session check did not report")

// maxBeforeMarker bounds what the login shell may print on stderr before the report line
// (a ~/.bashrc that talks); beyond it the session counts as without a report.
const maxBeforeMarker = 64 << 10

// InbandGuardError is returned by Run with InbandGuard when the session check reported a
// failure: the command did not run.
type InbandGuardError struct {
	Report provision.GuardReport
}

func (e *InbandGuardError) Error() string {
	f := e.Report.Failures
	if len(f) == 0 {
		f = []string{"the session check failed without naming a guard"}
	}
	return fmt.Sprintf("%v: %s", ErrGuard, strings.Join(f, "; "))
}

func (e *InbandGuardError) Unwrap() error { return ErrGuard }

// inbandGate reads the session's stderr until the session check's report line. Until then it
// holds back what the login shell printed and what the host's stdin holds: nothing is read
// from stdin, so a session that did not pass gives none of it to the box. After a passing
// report, stderr passes through and stdin opens; after anything else, stdin reads EOF.
type inbandGate struct {
	w      io.Writer // the caller's stderr
	once   sync.Once
	open   chan struct{} // closed when decided
	mu     sync.Mutex
	done   bool
	ok     bool
	report []byte // the JSON after the marker, when one came
	held   []byte // stderr before the report line
}

func newInbandGate(stderr io.Writer) *inbandGate {
	if stderr == nil {
		stderr = io.Discard
	}
	return &inbandGate{w: stderr, open: make(chan struct{})}
}

// Write is the session's stderr.
func (g *inbandGate) Write(p []byte) (int, error) {
	g.mu.Lock()
	if g.done {
		ok := g.ok
		g.mu.Unlock()
		if !ok {
			return len(p), nil
		}
		return g.w.Write(p)
	}
	g.held = append(g.held, p...)
	j := bytes.Index(g.held, []byte(provision.InbandMarker))
	nl := -1
	if j >= 0 {
		nl = bytes.IndexByte(g.held[j:], '\n')
	}
	if nl < 0 {
		if len(g.held) > maxBeforeMarker {
			g.decide(false)
		}
		g.mu.Unlock()
		return len(p), nil
	}
	before, rest := g.held[:j], g.held[j+nl+1:]
	g.report = append([]byte(nil), g.held[j+len(provision.InbandMarker):j+nl]...)
	rep, err := provision.ParseGuardReport(g.report)
	g.decide(err == nil && rep.OK)
	ok := g.ok
	g.mu.Unlock()
	if ok {
		// What the login shell printed before the check, then the command's own output.
		if _, err := g.w.Write(append(append([]byte(nil), before...), rest...)); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// decide records the outcome once and opens the gate; callers hold g.mu.
func (g *inbandGate) decide(ok bool) {
	if g.done {
		return
	}
	g.done, g.ok = true, ok
	g.held = nil
	g.once.Do(func() { close(g.open) })
}

// finish is called when the session has ended: an undecided gate closes without passing, and
// the outcome becomes Run's error (nil when the check passed).
func (g *inbandGate) finish() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.decide(false)
	switch {
	case g.ok:
		return nil
	case g.report == nil:
		return ErrNoInbandReport
	}
	rep, err := provision.ParseGuardReport(g.report)
	if err != nil {
		rep = provision.GuardReport{Failures: []string{fmt.Sprintf("the session check's report is unreadable: %v", err)}}
	}
	return &InbandGuardError{Report: rep}
}

// passed reports whether the check passed; it waits until the gate is decided.
func (g *inbandGate) passed() bool {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ok
}

// gatedStdin reads the caller's stdin only once the session check passed, and EOF otherwise.
type gatedStdin struct {
	g *inbandGate
	r io.Reader
}

func (s gatedStdin) Read(p []byte) (int, error) {
	if !s.g.passed() {
		return 0, io.EOF
	}
	return s.r.Read(p)
}
