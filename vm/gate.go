package vm

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// A Gate holds a session's command in the guest until the caller has decided that it may run:
// Run with SessionOptions.Gate opens the channel and starts the login shell at once, with
// GatePrefix before the command, so the session's setup (the channel, sshd's fork, the shell's
// start, which under software emulation is most of a short command's time) overlaps the
// caller's checks. The shell reads one line from the channel's stdin before anything else of
// the command line runs; the host writes that line only after Open. Until then nothing of
// the caller's stdin is read and what the guest prints is held back; after Refuse the
// shell reads EOF and exits GateClosedExit without running the command, and Run returns
// ErrGateRefused at once. What the guest has before the decision is only what the channel
// carries to start: the command line and the variables of SessionOptions.Env.
type Gate struct {
	once    sync.Once
	decided chan struct{}
	ok      bool
}

// NewGate returns an undecided gate.
func NewGate() *Gate { return &Gate{decided: make(chan struct{})} }

// Open lets the command run. Only the first of Open and Refuse counts.
func (g *Gate) Open() { g.decide(true) }

// Refuse ends the session without running the command.
func (g *Gate) Refuse() { g.decide(false) }

func (g *Gate) decide(ok bool) {
	g.once.Do(func() {
		g.ok = ok
		close(g.decided)
	})
}

// wait blocks until the gate is decided and reports whether it opened.
func (g *Gate) wait() bool {
	<-g.decided
	return g.ok
}

// done is closed once the gate is decided.
func (g *Gate) done() <-chan struct{} { return g.decided }

// GatePrefix is the shell text before a gated command: the shell reads the host's go-ahead
// line from stdin (bash's read takes one byte at a time from a pipe, so nothing after that
// line is consumed) and exits GateClosedExit on EOF.
var GatePrefix = fmt.Sprintf("IFS= read -r _ || exit %d; ", GateClosedExit)

// GateClosedExit is the status of a gated session whose gate was refused.
const GateClosedExit = 98

// ErrGateRefused is returned by Run when the session's Gate was refused: the command did not
// run.
var ErrGateRefused = errors.New("the session was refused before its command ran")

// gateStdin is a gated session's stdin: the go-ahead line once the gate opens, then the
// caller's stdin (nil: EOF); EOF at once when the gate is refused.
type gateStdin struct {
	g    *Gate
	r    io.Reader
	sent bool
}

func (s *gateStdin) Read(p []byte) (int, error) {
	if !s.g.wait() {
		return 0, io.EOF
	}
	if !s.sent {
		if len(p) == 0 {
			return 0, nil
		}
		s.sent = true
		p[0] = '\n'
		return 1, nil
	}
	if s.r == nil {
		return 0, io.EOF
	}
	return s.r.Read(p)
}

// gateWriter holds what the guest prints until the gate is decided: written through once it
// opened, dropped when it was refused. A Write that waits keeps the channel's window closed,
// so the guest cannot print more than that before the decision.
type gateWriter struct {
	g *Gate
	w io.Writer
}

func (w gateWriter) Write(p []byte) (int, error) {
	if !w.g.wait() || w.w == nil {
		return len(p), nil
	}
	return w.w.Write(p)
}
