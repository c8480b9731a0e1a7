package sandbox

import (
	"testing"
	"time"
)

// defaultCase is one resource attack run under a manifest with no [limits]: stopped by the
// default limit, with the log naming it as the default, while the same program finishes when
// the manifest raises that limit explicitly (the control).
type defaultCase struct {
	name string
	argv []string
	// low is the default the attack meets (the others stay roomy), raised the manifest's
	// explicit raise of it.
	low, raised Limits
	// value reads the limit from a Limits.
	value func(Limits) int64
}

// A fork bomb that keeps trying for half a second once the kernel refuses a fork, as bombs do,
// and a balloon that keeps what it got for a fifth of a second once memory is refused: on the
// direct path the host samples the sandbox every 5 ms, and both give it time to see them.
const (
	defaultForkBomb = "import os, sys, time\nkids = 0\nend = None\nwhile kids < 48:\n    try:\n        pid = os.fork()\n    except OSError:\n        end = end or time.time() + 0.5\n        if time.time() > end:\n            sys.exit(1)\n        time.sleep(0.01)\n        continue\n    if pid == 0:\n        time.sleep(1)\n        os._exit(0)\n    kids += 1\nfor _ in range(kids):\n    os.wait()\n"
	defaultBalloon  = "import sys, time\nb = []\ntry:\n    for i in range(512):\n        b.append(b'x' * (1 << 20))\nexcept MemoryError:\n    time.sleep(0.2)\n    sys.exit(1)\n"
)

func defaultCases() []defaultCase {
	return []defaultCase{
		{name: LimitTimeout, argv: []string{"/bin/sleep", "3"}, low: Limits{Timeout: time.Second}, raised: Limits{Timeout: 20 * time.Second},
			value: func(l Limits) int64 { return int64(l.Timeout) }},
		{name: LimitPids, argv: []string{python, "-c", defaultForkBomb}, low: Limits{Pids: 16}, raised: Limits{Pids: 256},
			value: func(l Limits) int64 { return int64(l.Pids) }},
		{name: LimitMemory, argv: []string{python, "-c", defaultBalloon}, low: Limits{Memory: 256 << 20}, raised: Limits{Memory: 2 << 30},
			value: func(l Limits) int64 { return l.Memory }},
	}
}

// TestDefaultLimits: a manifest without [limits] is held to DefaultLimits (here the one each
// attack meets lowered, so that it ends in seconds, and the others roomy), on the direct path; the run ends with the default limit named
// in the log and on the result, and the log lists the defaults that applied. With the limit
// raised in the manifest, the same program finishes.
func TestDefaultLimits(t *testing.T) {
	if !Direct(&Manifest{}) {
		t.Fatal("a manifest without [limits] no longer takes the direct path")
	}
	saved := DefaultLimits
	t.Cleanup(func() { DefaultLimits = saved })
	f := newFixture(t)
	for _, c := range defaultCases() {
		t.Run(c.name, func(t *testing.T) {
			DefaultLimits = Limits{Timeout: time.Minute, Memory: 2 << 30, Pids: 256, Scratch: DefaultScratch}.merge(c.low)
			res, out := f.run(t, &Manifest{}, c.argv)
			if res.Status == 0 || res.Limit != c.name || !res.Default {
				t.Errorf("no [limits]: status %d, limit %q (default %v), want a failure by the default %s:\n%.2000s", res.Status, res.Limit, res.Default, c.name, out)
			}
			rec := res.Record
			if rec.Limit != c.name || !rec.LimitDefault || rec.DefaultLimits == nil || c.value(*rec.DefaultLimits) != c.value(DefaultLimits) {
				t.Errorf("no [limits]: log limit %q, limitDefault %v, defaultLimits %+v, want %s as the default %d", rec.Limit, rec.LimitDefault, rec.DefaultLimits, c.name, c.value(DefaultLimits))
			}
			res, out = f.run(t, &Manifest{Limits: c.raised}, c.argv)
			if res.Status != 0 || res.Limit != "" {
				t.Errorf("control, %s raised to %d: status %d, limit %q, want 0 and none:\n%.2000s", c.name, c.value(c.raised), res.Status, res.Limit, out)
			}
			if rec := res.Record; rec.DefaultLimits == nil || c.value(*rec.DefaultLimits) != 0 || c.value(rec.Granted.Limits) != c.value(c.raised) {
				t.Errorf("control: log defaultLimits %+v, granted %+v: the raised %s must show as granted, not default", rec.DefaultLimits, rec.Granted.Limits, c.name)
			}
		})
	}
}

// TestDefaultLimitsValues pins the defaults the manual and SECURITY.md state, and that a
// manifest's own value replaces each one.
func TestDefaultLimitsValues(t *testing.T) {
	want := Limits{Timeout: 10 * time.Minute, Memory: 8 << 30, Pids: 1024, Scratch: 256 << 20}
	if DefaultLimits != want {
		t.Errorf("DefaultLimits = %+v, want %+v (as documented)", DefaultLimits, want)
	}
	if got := (Limits{}).WithDefaults(); got != want {
		t.Errorf("no limits set: %+v, want the defaults %+v", got, want)
	}
	set := Limits{Timeout: time.Hour, Memory: 1 << 40, Pids: 1 << 20, Scratch: 1 << 30, CPU: time.Second}
	if got := set.WithDefaults(); got != set {
		t.Errorf("every limit set: %+v, want them as set %+v", got, set)
	}
	if got := want.Unset(Limits{}); got != (Limits{}) {
		t.Errorf("defaults unchanged by narrowing: %+v, want them unset again", got)
	}
	if got := (Limits{Pids: 8, Timeout: want.Timeout}).Unset(Limits{}); got != (Limits{Pids: 8}) {
		t.Errorf("a narrowed pids: %+v, want pids 8 kept and the rest unset", got)
	}
	for name, text := range map[string]string{LimitTimeout: `"10m0s"`, LimitMemory: `"8GiB"`, LimitPids: "1024", LimitScratch: `"256MiB"`, LimitCPU: ""} {
		if got := DefaultText(name); got != text {
			t.Errorf("DefaultText(%s) = %s, want %s", name, got, text)
		}
	}
}

// merge returns l with the limits set in o replacing its own.
func (l Limits) merge(o Limits) Limits {
	if o.Timeout != 0 {
		l.Timeout = o.Timeout
	}
	if o.Memory != 0 {
		l.Memory = o.Memory
	}
	if o.Pids != 0 {
		l.Pids = o.Pids
	}
	return l
}
