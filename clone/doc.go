// Package clone implements clone mode: go-git fetches an untrusted repository on the host into a
// bare, hook-free, config-sanitised store, delivers it into the box, and fetches the box's commits
// back into refs/corral/... for review.
//
// It never creates a working tree of the untrusted repository on the host.
package clone
