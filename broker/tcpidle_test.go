package broker

import (
	"testing"
	"time"
)

// TestIdleClock: the Darwin sweeper's idle time counts from the last change of the byte
// counters, and restarts whenever they move.
func TestIdleClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var k idleClock
	for _, step := range []struct {
		moved uint64
		at    time.Duration
		want  time.Duration
	}{
		{0, 0, 0},                             // first observation: not idle yet
		{0, 5 * time.Second, 5 * time.Second}, // nothing moved
		{0, 9 * time.Second, 9 * time.Second}, // still nothing
		{10, 10 * time.Second, 0},             // data moved: the clock restarts
		{10, 40 * time.Second, 30 * time.Second},
		{11, 41 * time.Second, 0},
	} {
		if got := k.observe(step.moved, t0.Add(step.at)); got != step.want {
			t.Fatalf("observe(%d) at +%v = %v, want %v", step.moved, step.at, got, step.want)
		}
	}
}
