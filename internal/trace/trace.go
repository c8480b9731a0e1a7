// Package trace times the steps of one git corral process when CORRAL_TRACE is set: each step
// prints one line on stderr with its start (ms since the process began) and its duration. It
// is how docs/benchmarks-history.md ("## vm") splits a warm `git corral run` into its parts; it
// prints nothing else, and never a value.
package trace

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var (
	enabled = os.Getenv("CORRAL_TRACE") != ""
	began   = time.Now()
	mu      sync.Mutex
)

// Enabled reports whether CORRAL_TRACE is set.
func Enabled() bool { return enabled }

// Step starts timing the step name; calling the returned func ends it and prints its line.
func Step(name string) func() {
	if !enabled {
		return func() {}
	}
	t := time.Now()
	return func() {
		d := time.Since(t)
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stderr, "corral: trace: %8.1f ms %8.1f ms  %s\n", ms(t.Sub(began)), ms(d), name)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
