package sandbox

import (
	"bytes"
	"testing"
	"time"
)

// limitCase is one resource attack: stopped under its limit, with the log naming the limit, and
// the same command finishing under a roomier limit (the control).
type limitCase struct {
	name      string
	argv      func(f *fixture, heavy bool) []string
	limits    Limits
	roomy     Limits
	wantLimit string
	// wantStatus is the stopped run's status; 0 means any failure.
	wantStatus int
}

const python = "/usr/bin/python3"

func limitCases() []limitCase {
	probe := func(kind, heavy, light string) func(*fixture, bool) []string {
		return func(f *fixture, h bool) []string {
			if h {
				return []string{f.self, "probe", kind, heavy}
			}
			return []string{f.self, "probe", kind, light}
		}
	}
	py := func(heavy, light string) func(*fixture, bool) []string {
		return func(f *fixture, h bool) []string {
			if h {
				return []string{python, "-c", heavy}
			}
			return []string{python, "-c", light}
		}
	}
	forkBomb := "import os, time\nfor i in range(%s):\n    if os.fork() == 0:\n        time.sleep(5)\n        os._exit(0)\n"
	balloon := "b = []\nfor i in range(%s):\n    b.append(b'x' * (1 << 20))\n"
	return []limitCase{
		{name: "timeout", argv: probe("sleep", "60s", "10ms"), limits: Limits{Timeout: time.Second},
			roomy: Limits{Timeout: 20 * time.Second}, wantLimit: LimitTimeout, wantStatus: 124},
		{name: "fork bomb", argv: py(sprintf(forkBomb, "256"), sprintf(forkBomb, "4")), limits: Limits{Pids: 16},
			roomy: Limits{Pids: 64}, wantLimit: LimitPids},
		{name: "memory balloon", argv: py(sprintf(balloon, "1024"), sprintf(balloon, "16")), limits: Limits{Memory: 256 << 20},
			roomy: Limits{Memory: 256 << 20}, wantLimit: LimitMemory},
		{name: "full scratch disk", argv: probe("fill", "64", "2"), limits: Limits{Scratch: 8 << 20},
			roomy: Limits{Scratch: 8 << 20}, wantLimit: LimitScratch, wantStatus: 3},
		{name: "cpu spin", argv: probe("spin", "30", "0"), limits: Limits{CPU: time.Second},
			roomy: Limits{CPU: 30 * time.Second}, wantLimit: LimitCPU},
		{name: "output flood", argv: probe("print", "4096", "16"), limits: Limits{Output: 64 << 10},
			roomy: Limits{Output: 64 << 10}, wantLimit: LimitOutput, wantStatus: 137},
	}
}

// TestLimits runs every resource attack for real.
func TestLimits(t *testing.T) {
	f := newFixture(t)
	for _, c := range limitCases() {
		t.Run(c.name, func(t *testing.T) {
			res, out := f.run(t, &Manifest{Limits: c.limits}, c.argv(f, true))
			if res.Status == 0 || (c.wantStatus != 0 && res.Status != c.wantStatus) {
				t.Errorf("status %d, want %d (non-zero):\n%.2000s", res.Status, c.wantStatus, out)
			}
			if res.Limit != c.wantLimit || res.Record.Limit != c.wantLimit {
				t.Errorf("limit %q (log %q), want %q:\n%.2000s", res.Limit, res.Record.Limit, c.wantLimit, out)
			}
			res, out = f.run(t, &Manifest{Limits: c.roomy}, c.argv(f, false))
			if res.Status != 0 || res.Limit != "" {
				t.Errorf("control: status %d, limit %q, want 0 and none:\n%.2000s", res.Status, res.Limit, out)
			}
		})
	}
	lines := f.logLines(t)
	for _, c := range limitCases() {
		found := false
		for _, l := range lines {
			found = found || l["limit"] == c.wantLimit
		}
		if !found {
			t.Errorf("no line of the sandbox log names the limit %q", c.wantLimit)
		}
	}
}

// run runs argv in the sandbox with manifest m.
func (f *fixture) run(t *testing.T, m *Manifest, argv []string) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	o := f.options(m, &out)
	o.Argv = argv
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatalf("sandbox %v: %v\n%s", argv, err, out.String())
	}
	return res, out.String()
}
