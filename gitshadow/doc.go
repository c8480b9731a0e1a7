// Package gitshadow finds every git directory the host will execute from (the top level, the
// common dir, submodules at any depth, linked worktrees) and plans what the guest must shadow in
// each, and it snapshots, watches, verifies and restores that metadata from the host, where the
// box cannot reach.
//
// The rules it enforces:
//   - Nothing the box writes into git metadata is ever executed by the host's git: config,
//     config.worktree, hooks, commondir, gitdir files, info/, the .git files of submodule work
//     trees and the work-tree files the host's own config points at (core.hooksPath, include.path,
//     includeIf) are shadowed read-only in the guest and snapshotted on the host.
//   - Guest-side shadows are defence in depth; the host-side snapshot is the control: any change
//     to a snapshotted file is restored at once, the box's version is kept in quarantine for
//     review, and the change is reported.
//   - Git dirs that appear during a session (a submodule or worktree added in the box) are
//     neutralised from the host: their hooks are quarantined and their config is cut down to an
//     allow-list of keys that execute nothing.
//   - Discovery never runs anything from the repository: it reads files, asks go-git, and calls
//     only git config --list and git rev-parse, which execute no repository code.
//
// Deviation from DESIGN.md (decided by the lead so work could proceed in parallel): the guest
// script that applies the plan is rendered here, by Plan.GuestScript, and the guard check's shell
// text by Plan.GuardChecks; package provision places the script in its boot order and package vm
// runs the guard check.
package gitshadow
