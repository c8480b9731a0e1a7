package main

import (
	"os"
	"testing"

	"github.com/git-corral/git-corral/internal/inittrace"
)

// startBudget is what each of git corral's own packages may allocate in its initialisers. Every
// command, `version` and `sandbox` included, pays for all of them before main; before they were
// made lazy (internal/lazyre, vm's cidataPad) vm allocated 1.1 MB at start, policy 4,791 times
// and provision, clone, diff and session 700 to 1,900 times (docs/benchmarks-history.md, sandbox).
var startBudget = inittrace.Budget{Bytes: 32 << 10, Allocs: 128}

// TestStartBudget holds every git corral package linked into this binary to startBudget: this
// test binary links the same packages as git-corral, and running it with no test runs only
// their initialisers. The clock column is not judged: on a shared machine it is noise.
func TestStartBudget(t *testing.T) {
	inits, err := inittrace.Run(os.Args[0], "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, in := range inits {
		if in.Package == "github.com/git-corral/git-corral/policy" {
			seen++
		}
	}
	if seen != 1 {
		t.Fatalf("the trace has %d lines for package policy, want 1: the binary no longer links it, or the trace changed form", seen)
	}
	for _, o := range inittrace.Over(inits, "github.com/git-corral/git-corral/", startBudget) {
		t.Error(o)
	}
}
