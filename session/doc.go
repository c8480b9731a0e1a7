// Package session owns the host side of a session around the box: the git metadata snapshot
// taken before the box can touch it, the watcher that restores changes while a session runs,
// the verification when it ends, and the session base git corral diff compares against.
//
// It does not start boxes (package vm) or decide policy (package policy); it is handed the
// project and the effective configuration.
package session
