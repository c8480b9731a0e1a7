package vm

import (
	"context"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
)

func TestLockExcludes(t *testing.T) {
	m := &Manager{Home: home.Home{Dir: t.TempDir()}}
	ctx := context.Background()
	unlock, err := m.Lock(ctx, "box-abc123", nil)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{}, 1)
	got := make(chan time.Time, 1)
	go func() {
		u2, err := m.Lock(ctx, "box-abc123", func() { waited <- struct{}{} })
		if err != nil {
			t.Error(err)
			return
		}
		got <- time.Now()
		u2()
	}()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("second Lock did not report waiting")
	}
	released := time.Now()
	unlock()
	select {
	case at := <-got:
		if at.Before(released) {
			t.Fatal("second Lock got the lock before the first released it")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second Lock never got the lock")
	}
	// Another box is independent.
	u3, err := m.Lock(ctx, "other-000000", nil)
	if err != nil {
		t.Fatal(err)
	}
	u3()
}

func TestLockHonoursContext(t *testing.T) {
	m := &Manager{Home: home.Home{Dir: t.TempDir()}}
	unlock, err := m.Lock(context.Background(), "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := m.Lock(ctx, "b", nil); err == nil {
		t.Fatal("Lock on a held lock returned without the context ending")
	}
}
