package main

import (
	"os"
	"testing"

	"github.com/git-corral/git-corral/internal/inittrace"
)

// TestStartBudget holds the light tier's exec step to a start-up budget: it starts once for
// every `git corral sandbox` run, so each of git corral's packages it links may allocate at
// most 2 KiB in 32 allocations in its initialisers (sandbox allocated 3,248 bytes in 43
// allocations before its manifest's pattern was made lazy, 512 in 4 after). This test binary links the same packages as git-corral-sandbox; run with no test,
// only their initialisers run.
func TestStartBudget(t *testing.T) {
	inits, err := inittrace.Run(os.Args[0], "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inits {
		if in.Package == "github.com/git-corral/git-corral/policy" {
			t.Errorf("the exec step links package policy (%d bytes at start): narrowing by the repository's table belongs in cmd/git-corral", in.Bytes)
		}
	}
	for _, o := range inittrace.Over(inits, "github.com/git-corral/git-corral/", inittrace.Budget{Bytes: 2 << 10, Allocs: 32}) {
		t.Error(o)
	}
}
