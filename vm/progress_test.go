package vm

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestProgressPlain(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, false)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	p.now = func() time.Time { return now }
	p.Phase("copy image")
	now = now.Add(2 * time.Second)
	p.Phase("boot")
	now = now.Add(10 * time.Second)
	p.Phase("boot")
	now = now.Add(30 * time.Second)
	p.Done("box x", nil)
	want := "03:04:05 corral: copy image (0.0s)\n03:04:07 corral: boot (2.0s)\n03:04:47 corral: box x ready (42.0s)\n"
	if b.String() != want {
		t.Errorf("plain progress:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestProgressTTY(t *testing.T) {
	var b syncBuilder
	p := NewProgress(&b, true)
	p.Phase("boot")
	p.Phase("waiting for SSH")
	p.Done("box x", errors.New("boom"))
	out := b.String()
	for _, w := range []string{"\r\x1b[K", "boot", "waiting for SSH", "box x failed in"} {
		if !strings.Contains(out, w) {
			t.Errorf("tty progress %q lacks %q", out, w)
		}
	}
}

func TestProgressNil(t *testing.T) {
	var p *Progress
	p.Phase("x")
	p.Done("y", nil)
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProgressOnPhase: a hook runs once, when its phase begins, and not for another phase; a
// nil Progress takes a hook and never calls it.
func TestProgressOnPhase(t *testing.T) {
	p := NewProgress(nil, false)
	calls := make(chan string, 4)
	p.OnPhase("provisioning", func() { calls <- "provisioning" })
	p.Phase("boot")
	p.Phase("waiting for SSH")
	select {
	case c := <-calls:
		t.Fatalf("hook called at %q's phase before it began", c)
	case <-time.After(50 * time.Millisecond):
	}
	p.Phase("provisioning")
	select {
	case <-calls:
	case <-time.After(5 * time.Second):
		t.Fatal("hook not called when its phase began")
	}
	p.Phase("waiting for SSH")
	p.Phase("provisioning") // a phase seen again calls nothing again
	select {
	case <-calls:
		t.Fatal("hook called twice")
	case <-time.After(50 * time.Millisecond):
	}
	var np *Progress
	np.OnPhase("boot", func() { t.Error("nil progress called a hook") })
	np.Phase("boot")
}
