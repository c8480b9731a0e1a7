// Package inittrace reads the Go runtime's package initialiser trace (GODEBUG=inittrace=1),
// so that a test can hold git corral's own packages to a start-up budget.
//
// Why: every git corral command, `version` and `sandbox` included, runs every package
// initialiser of the binary before main. A package-level regexp.MustCompile of a counted
// repetition, a template parsed or a table built at start is paid by every command; the light
// tier's goal ("within 30 ms of bare bubblewrap", issue 22) cannot be met with tens of
// milliseconds of them. Owns: parsing the trace and checking it against a budget. Does not
// own: the budget's figures, which the tests that use it choose; the clock column, which is
// too noisy on a shared machine to assert on (bytes and allocations are not).
package inittrace

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Init is one package's line of the trace.
type Init struct {
	Package string
	ClockMS float64
	Bytes   int64
	Allocs  int64
}

// Parse returns the trace's lines found in out (a process's standard error), in order; other
// lines are skipped. A trace line is "init PKG @T ms, C ms clock, B bytes, A allocs".
func Parse(out []byte) []Init {
	var inits []Init
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[5] != "ms" || f[6] != "clock," || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		clock, err1 := strconv.ParseFloat(f[4], 64)
		b, err2 := strconv.ParseInt(f[7], 10, 64)
		a, err3 := strconv.ParseInt(f[9], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		inits = append(inits, Init{Package: f[1], ClockMS: clock, Bytes: b, Allocs: a})
	}
	return inits
}

// Run starts exe with args and GODEBUG=inittrace=1 and returns its trace. The process's own
// exit status is not checked: only its start matters.
func Run(exe string, args ...string) ([]Init, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run()
	inits := Parse(stderr.Bytes())
	if len(inits) == 0 {
		return nil, fmt.Errorf("run %q with GODEBUG=inittrace=1: no trace on stderr (%d bytes)", exe, stderr.Len())
	}
	return inits, nil
}

// Budget is what one package's initialisers may allocate at start.
type Budget struct {
	Bytes  int64
	Allocs int64
}

// Over returns a sentence for every package whose path starts with prefix and whose
// initialisers allocated more than b, naming the package, what it allocated and the budget.
func Over(inits []Init, prefix string, b Budget) []string {
	var over []string
	for _, in := range inits {
		if !strings.HasPrefix(in.Package, prefix) || (in.Bytes <= b.Bytes && in.Allocs <= b.Allocs) {
			continue
		}
		over = append(over, fmt.Sprintf("package %q allocates %d bytes in %d allocations at start (budget %d bytes, %d allocations): make its package-level values lazy (internal/lazyre, sync.OnceValue)",
			in.Package, in.Bytes, in.Allocs, b.Bytes, b.Allocs))
	}
	return over
}
