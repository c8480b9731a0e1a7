package sandbox

import "slices"

// wholeProgram is seccompfilter.Whole as assembled at build time (seccompWhole).
func wholeProgram() ([]byte, error) { return slices.Clone(seccompWhole), nil }

// setupProgram is seccompfilter.Setup as assembled at build time (seccompSetup).
func setupProgram() ([]byte, error) { return slices.Clone(seccompSetup), nil }
