//go:build !linux

package inside

// becomeSubreaper has no counterpart outside Linux, where the light tier does not run.
func becomeSubreaper() {}
