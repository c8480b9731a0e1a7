package sandbox

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDirectWhen: a run goes without the init step only when it has no broker and no limit
// whose attribution needs the init step's report.
func TestDirectWhen(t *testing.T) {
	cases := map[string]struct {
		m    Manifest
		want bool
	}{
		"nothing":         {Manifest{}, true},
		"grants":          {Manifest{Read: []string{"/srv"}, Write: []string{"/tmp/x"}, Exec: []string{"/usr/bin/env"}, Env: []string{"LANG"}}, true},
		"timeout, output": {Manifest{Limits: Limits{Timeout: time.Second, Output: 10}}, true},
		"network":         {Manifest{Network: []string{"example.com"}}, false},
		"pids":            {Manifest{Limits: Limits{Pids: 8}}, false},
		"cpu":             {Manifest{Limits: Limits{CPU: time.Second}}, false},
		"memory":          {Manifest{Limits: Limits{Memory: 1 << 20}}, false},
		"scratch":         {Manifest{Limits: Limits{Scratch: 1 << 20}}, false},
	}
	for name, tc := range cases {
		if got := Direct(&tc.m); got != tc.want {
			t.Errorf("%s: Direct = %v, want %v", name, got, tc.want)
		}
	}
}

// TestDirectAndInit: the same runs through both paths (direct, and with the init step because
// an explicit scratch limit asks for its report) pass the command's status through, give the
// command the planned environment and no host variable, and end a signalled command with
// 128+N; a sandbox that fails before the command starts is an error in both, never a status.
func TestDirectAndInit(t *testing.T) {
	f := newFixture(t)
	for _, mode := range []struct {
		name string
		m    func() *Manifest
	}{
		{"direct", func() *Manifest { return &Manifest{} }},
		{"init", func() *Manifest { return &Manifest{Limits: Limits{Scratch: 64 << 20}} }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			if Direct(mode.m()) != (mode.name == "direct") {
				t.Fatalf("the %s case does not take the %s path", mode.name, mode.name)
			}
			res, out := f.sandboxed(t, mode.m(), "env", "TMPDIR")
			if res.Status != 0 || !strings.Contains(out, "TMPDIR=/tmp") {
				t.Errorf("planned variable: status %d, %q", res.Status, out)
			}
			res, out = f.sandboxed(t, mode.m(), "env", "CANARY_TOKEN")
			if res.Status != 3 || strings.Contains(out, "s3cret") {
				t.Errorf("host variable: status %d (want the probe's 3, passed through), %q", res.Status, out)
			}
			o := f.options(mode.m(), &bytes.Buffer{})
			o.Argv = []string{"/bin/sh", "-c", "kill -TERM $$"}
			res, err := Run(t.Context(), o)
			if err != nil || res.Status != 143 {
				t.Errorf("signalled command: %v, %+v", err, res)
			}
			var buf bytes.Buffer
			o = f.options(mode.m(), &buf, "env", "TMPDIR")
			o.Self = "/bin/false"
			if res, err := Run(t.Context(), o); !errors.Is(err, ErrSetup) {
				t.Errorf("an inside step that never ran: want ErrSetup, got %+v, %v\n%s", res, err, buf.String())
			}
		})
	}
}
