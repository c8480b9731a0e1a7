package vm

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress shows the phases of a long operation (image build, box creation and boot). On a
// terminal it redraws one status line with the phase and the elapsed time; otherwise it prints
// one timestamped line per phase, which logs and CI read well.
type Progress struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	mu    sync.Mutex
	start time.Time
	phase string
	since time.Time
	stop  chan struct{}
	done  chan struct{}
	hooks map[string]func() // OnPhase's, each called once
}

// OnPhase has f called, in a goroutine of its own, when phase name begins; at most once. p may
// be nil (f is then never called).
func (p *Progress) OnPhase(name string, f func()) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hooks == nil {
		p.hooks = map[string]func(){}
	}
	p.hooks[name] = f
}

// NewProgress returns a Progress writing to w; tty selects the redrawn status line. A nil w
// discards everything.
func NewProgress(w io.Writer, tty bool) *Progress {
	if w == nil {
		w = io.Discard
	}
	return &Progress{w: w, tty: tty, now: time.Now}
}

// Phase starts a new phase named name, ending the previous one; repeating the current phase
// does nothing.
func (p *Progress) Phase(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if name == p.phase {
		return // Lima repeats its "waiting" lines while it polls
	}
	t := p.now()
	if p.start.IsZero() {
		p.start = t
		if p.tty {
			p.stop, p.done = make(chan struct{}), make(chan struct{})
			go p.tick()
		}
	}
	if p.tty && p.phase != "" {
		fmt.Fprintf(p.w, "\r\x1b[K  %-22s %6.1fs\n", p.phase, t.Sub(p.since).Seconds())
	}
	p.phase, p.since = name, t
	if f := p.hooks[name]; f != nil {
		delete(p.hooks, name)
		go f()
	}
	if !p.tty {
		fmt.Fprintf(p.w, "%s corral: %s (%.1fs)\n", t.UTC().Format("15:04:05"), name, t.Sub(p.start).Seconds())
		return
	}
	p.draw(t)
}

// draw redraws the status line; the caller holds mu.
func (p *Progress) draw(t time.Time) {
	fmt.Fprintf(p.w, "\r\x1b[K… %-22s %6.1fs (total %.1fs)", p.phase, t.Sub(p.since).Seconds(), t.Sub(p.start).Seconds())
}

func (p *Progress) tick() {
	defer close(p.done)
	tk := time.NewTicker(200 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tk.C:
			p.mu.Lock()
			p.draw(p.now())
			p.mu.Unlock()
		}
	}
}

// Done ends the last phase with a summary line naming what finished (or failed).
func (p *Progress) Done(what string, err error) {
	if p == nil {
		return
	}
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		return
	}
	t := p.now()
	status := "ready"
	if err != nil {
		status = "failed"
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K  %-22s %6.1fs\n", p.phase, t.Sub(p.since).Seconds())
		fmt.Fprintf(p.w, "%s %s in %.1fs\n", what, status, t.Sub(p.start).Seconds())
		return
	}
	fmt.Fprintf(p.w, "%s corral: %s %s (%.1fs)\n", t.UTC().Format("15:04:05"), what, status, t.Sub(p.start).Seconds())
}
