//go:build !linux

package sandbox

// becomeSubreaper has no counterpart outside Linux, where the light tier does not run.
func becomeSubreaper() {}
