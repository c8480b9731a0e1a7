package inittrace

import (
	"os"
	"strings"
	"testing"
)

// before is the trace of git-corral version at 5562218, before its initialisers were made lazy,
// three of its lines and two that are not the trace.
const before = `init runtime @0.48 ms, 2.9 ms clock, 0 bytes, 0 allocs
init github.com/git-corral/git-corral/policy @48 ms, 4.2 ms clock, 379960 bytes, 4791 allocs
init github.com/git-corral/git-corral/vm @60 ms, 26 ms clock, 1124248 bytes, 937 allocs
init github.com/git-corral/git-corral/session @87 ms, 0.24 ms clock, 51944 bytes, 729 allocs
git corral 0.0.0-dev
init github.com/git-corral/git-corral/agents @31 ms, garbled
`

// after is the same packages' lines after.
const after = `init runtime @0.48 ms, 2.9 ms clock, 0 bytes, 0 allocs
init github.com/git-corral/git-corral/policy @48 ms, 0.10 ms clock, 13200 bytes, 70 allocs
init github.com/git-corral/git-corral/vm @60 ms, 0.16 ms clock, 9248 bytes, 22 allocs
init github.com/git-corral/git-corral/session @87 ms, 0.002 ms clock, 752 bytes, 7 allocs
`

// TestParse proves the trace's lines are read with every column and other lines are skipped.
func TestParse(t *testing.T) {
	got := Parse([]byte(before))
	if len(got) != 4 {
		t.Fatalf("Parse: %d lines, want 4: %+v", len(got), got)
	}
	want := Init{Package: "github.com/git-corral/git-corral/vm", ClockMS: 26, Bytes: 1124248, Allocs: 937}
	if got[2] != want {
		t.Errorf("Parse line 3 = %+v, want %+v", got[2], want)
	}
}

// TestOver proves the budget names each package over it (the trace before the cut) and passes
// the same packages under it (after); packages outside the prefix are never judged.
func TestOver(t *testing.T) {
	b := Budget{Bytes: 32 << 10, Allocs: 128}
	over := Over(Parse([]byte(before)), "github.com/git-corral/git-corral/", b)
	if len(over) != 3 || !strings.Contains(over[1], `"github.com/git-corral/git-corral/vm" allocates 1124248 bytes in 937 allocations`) {
		t.Errorf("Over(before) = %q, want policy, vm and session named", over)
	}
	if over := Over(Parse([]byte(after)), "github.com/git-corral/git-corral/", b); len(over) != 0 {
		t.Errorf("Over(after) = %q, want none", over)
	}
	if over := Over(Parse([]byte(before)), "example.com/", b); len(over) != 0 {
		t.Errorf("Over(other prefix) = %q, want none", over)
	}
}

// TestRun proves Run reads a real process's trace: this test binary's own, run with no test.
func TestRun(t *testing.T) {
	inits, err := Run(os.Args[0], "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inits {
		if in.Package == "runtime" {
			return
		}
	}
	t.Errorf("Run: no runtime line in %+v", inits)
}
