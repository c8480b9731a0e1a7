package session

import (
	"context"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/sshtest"
	"github.com/git-corral/git-corral/vm"
)

// TestTakeEarly: the connection dialled while the box started is the session's when it was
// dialled to the session's endpoint, and used once; one dialled to another endpoint is closed
// and not used; a hook that never fired (the box was running) gives nothing and waits for
// nothing.
func TestTakeEarly(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	b := testBox(t, srv, startGuardDaemon(t, reportPass, 0), nil)
	ep, err := b.endpoint()
	if err != nil {
		t.Fatal(err)
	}
	dialed := func(ep vm.Endpoint) *earlyConn {
		e := &earlyConn{done: make(chan struct{}), ep: ep}
		e.fired.Store(true)
		e.c, e.err = vm.Dial(context.Background(), ep)
		if e.err != nil {
			t.Fatal(e.err)
		}
		close(e.done)
		return e
	}
	ctx := context.Background()

	e := dialed(ep)
	b.early = e
	if c := b.takeEarly(ctx, ep); c != e.c {
		t.Fatalf("takeEarly gave %p, want the early connection %p", c, e.c)
	}
	if out, code, err := e.c.Output(ctx, []string{"echo", "early"}); err != nil || code != 0 || string(out) != "early\n" {
		t.Errorf("the early connection runs nothing: %q %d %v", out, code, err)
	}
	if b.early != nil || b.takeEarly(ctx, ep) != nil {
		t.Error("the early connection can be taken twice")
	}
	e.c.Close()

	other := ep
	other.Port++
	e = dialed(ep)
	e.ep = other // dialled to where the session is not going
	b.early = e
	if c := b.takeEarly(ctx, ep); c != nil {
		t.Fatal("an early connection to another endpoint was used")
	}
	if _, _, err := e.c.Output(ctx, []string{"true"}); err == nil {
		t.Error("an early connection to another endpoint was left open")
	}

	b.early = &earlyConn{done: make(chan struct{})} // its phase never began
	t0 := time.Now()
	if c := b.takeEarly(ctx, ep); c != nil || time.Since(t0) > time.Second {
		t.Errorf("takeEarly of a hook that never fired: %v after %v; want nil at once", c, time.Since(t0))
	}
	var none *earlyConn
	none.drop()

	// A connection that no longer answers (the privilege drop ends the box user's processes
	// that hold a group it removed, which can be this connection's sshd; here the connection
	// is closed under it) is not used.
	e = dialed(ep)
	b.early = e
	e.c.Close()
	if c := b.takeEarly(ctx, ep); c != nil {
		t.Fatal("a connection that no longer answers was used")
	}
}
