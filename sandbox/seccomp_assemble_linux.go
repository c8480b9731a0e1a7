//go:build linux && !amd64

package sandbox

import "github.com/git-corral/git-corral/sandbox/internal/seccompfilter"

// wholeProgram assembles the whole filter at run time: no program is built in for this
// architecture.
func wholeProgram() ([]byte, error) { return seccompfilter.Whole() }

// setupProgram assembles bubblewrap's filter at run time, as wholeProgram does.
func setupProgram() ([]byte, error) { return seccompfilter.Setup() }
