package sandbox

import (
	"strings"
	"testing"
)

// TestMemoryLimitBelowTheStep: an address-space limit far below the exec step's own (a Go
// program reserves hundreds of MiB) limits the command, and does not crash the step before the
// command starts. Control: the same command with a roomy limit, and with none.
func TestMemoryLimitBelowTheStep(t *testing.T) {
	f := newFixture(t)
	// Many long arguments: copying them for execve needs fresh heap in the step.
	argv := []string{"/bin/echo"}
	for i := 0; i < 3000; i++ {
		argv = append(argv, strings.Repeat("a", 400))
	}
	for _, mem := range []int64{24 << 20, 1 << 30, 0} {
		res, out := f.run(t, &Manifest{Exec: []string{"/bin/echo"}, Limits: Limits{Memory: mem}}, argv)
		if res.Status != 0 || strings.Count(out, "aaaa ") < 1000 {
			t.Errorf("memory limit %d: status %d, want 0 and the arguments echoed:\n%.1000s", mem, res.Status, out)
		}
	}
}
