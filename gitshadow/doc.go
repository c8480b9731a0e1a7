// Package gitshadow finds every git directory the host will execute from (the top level, the
// common dir, submodules at any depth, linked worktrees) and plans what the guest must shadow in
// each, and it snapshots, watches, verifies and restores that metadata from the host, where the
// box cannot reach.
//
// The rules it enforces:
//   - Nothing the box writes into git metadata is ever executed by the host's git: config,
//     config.worktree, hooks, commondir, gitdir files, info/, the .git files of submodule work
//     trees and every path in the box's reach that the host's own effective config names (a
//     core.fsmonitor script, drivers, ! aliases, core.hooksPath, includes: configrefs.go) are
//     shadowed read-only in the guest and snapshotted on the host.
//   - Guest-side shadows are defence in depth; the host-side snapshot is the control: any change
//     to a snapshotted file is restored at once, the box's version is kept in quarantine for
//     review, and the change is reported.
//   - Git dirs that appear during a session (a submodule or worktree added in the box) are
//     neutralised from the host: their hooks are quarantined and their config is cut down to an
//     allow-list of keys that execute nothing.
//   - Discovery never runs anything from the repository: it reads files, asks go-git, and calls
//     only git config --list and git rev-parse, which execute no repository code. Config values
//     that are shell commands are split into words (command.go), never run.
//
// Decisions:
//   - Refs stay writable (refs/, packed-refs, HEAD, the index, logs, objects): git in the box must
//     commit, branch, fetch and push, and refs are data the host reads but never executes;
//     package diff reviews them.
//   - info/ is read-only in the guest and snapshotted whole: info/attributes can route files
//     through filter and diff drivers the host's own config defines, and info/sparse-checkout
//     and info/grafts change what the host's git does.
//   - A git dir is pinned by bind-mounting it onto itself: rename(2) and rmdir(2) of a mount
//     point fail with EBUSY in the guest kernel's VFS, whatever the filesystem (9p, virtiofs,
//     FUSE), so a box user without root cannot move .git away and re-create it. A box user with
//     root, a case-variant spelling on a case-insensitive host filesystem, and paths that did
//     not exist at boot all sidestep the guest, which is why the host checks on its own.
//   - Git dirs added during a session are neither refused nor re-shadowed live: the host
//     neutralises and adopts them (see neutralise.go); the guest shadows them from its next boot.
//
// Use from the session flow (package session):
//
//	plan, err := gitshadow.Discover(ctx, proj)     // before booting; plan.OutsideTopLevel must be mounted too
//	script, err := plan.BootScript()               // GuestScript + the guard's expectations; provision runs it as root at every boot
//	snap, err := gitshadow.TakeSnapshot(ctx, plan, stateDir) // before the box boots
//	go gitshadow.Watch(watchCtx, snap, report)     // restores at once; report prints and audits
//	... session ...
//	cancelWatch(); changes, err := gitshadow.Verify(ctx, snap) // err wraps ErrNotRestored
//
// Use from git corral diff: plan.DiffPaths() fills diff.Options.ConfigPaths (each converts with
// diff.ConfigPath(d)), so a change to a file the host's config names is a finding naming the key.
//
// The guest script needs util-linux (mount, findmnt) and coreutils (realpath); it must run after
// the project mount is up (systemd: RequiresMountsFor= the top level and every OutsideTopLevel
// dir) and before any project provision script or session, at every boot. It keeps its copies
// in GuestStateDir on the guest's own disk.
//
// Verify and Watch must not run at the same time on one snapshot's files from two processes;
// within one process they share a lock. LoadSnapshot(ctx, stateDir) verifies a session that
// crashed.
//
// The guest script that applies the plan is rendered here (Plan.GuestScript, and with the guard
// check's expectations and shell text, Plan.BootScript), because only this package knows what
// the plan means; package provision places the script in its boot order, and the guest's guard
// check runs gitshadow's part (GuardPath) before every session.
package gitshadow
