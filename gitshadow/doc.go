// Package gitshadow finds every git directory the host will execute from (the top level, the
// common dir, submodules at any depth, linked worktrees) and plans what the guest must shadow in
// each, and it snapshots and verifies that metadata from the host, where the box cannot reach.
//
// It does not own the text of the guest scripts that apply the plan: package provision renders
// those.
package gitshadow
