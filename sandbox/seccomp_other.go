//go:build !linux

package sandbox

import (
	"fmt"
	"runtime"
)

// SeccompProgram is Linux's: elsewhere the light tier does not run (the manifest renders as a
// Seatbelt profile on macOS, seatbelt.go), so there is no filter to build and a run is refused.
func SeccompProgram() ([]byte, error) {
	return nil, fmt.Errorf("the light tier's seccomp filter needs Linux, not %s", runtime.GOOS)
}

// SetupSeccompProgram is Linux's, as SeccompProgram is.
func SetupSeccompProgram() ([]byte, error) {
	return nil, fmt.Errorf("the light tier's seccomp filter needs Linux, not %s", runtime.GOOS)
}
