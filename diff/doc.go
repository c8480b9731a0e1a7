// Package diff records a session base when a session starts and classifies what changed since in
// the files the host will execute (build files, package manager hooks, editor and agent configs,
// git metadata and the like).
//
// It compares raw work-tree bytes and never runs anything from the repository: no textconv, no
// external diff, no filters.
package diff
