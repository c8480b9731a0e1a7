// Package session owns the flow of one session, for every source of the box's code: a mounted
// checkout, a clone directory (a box that holds its checkout on its own disk), and a checkout
// whose policy says source = "clone".
//
// Open brings the box up: the configuration with the flag layer, the preflight (the
// environment assembles, an SSH agent exists when asked for, the audit log takes a start
// record), the provision approval, the git shadow plan, the hide and box_dirs paths resolved on
// the host (hide.go: a box made with other lists is refused, missing box_dirs are made) and the
// guest scripts, the drift notice,
// the snapshot of git metadata before boot, automatic snapshots and idle stop, vm.Ensure, and
// the box's broker child in broker mode. OpenClone does the same for a box that mounts nothing
// of the host (clone and fetch), with the same network-change rule, broker port rule, preflight
// and audit. Preview runs the guards of Open that need no box, the same functions, for the
// commands that show a box without starting it (preview.go). (*Box).Run runs one command: the connection, the guest guard check (the guard
// daemon's report, in-band, or a separate check), the host-side guard of git metadata (snapshot
// verified, watched, verified again; the session base for git corral diff), the environment in
// the SSH channel, and the audit records of launch, exit and refusal.
//
// It does not print on its own: the UI (streams, notices, the confirm prompt, progress) is
// handed in by cmd/git-corral, which also owns the exit codes. Errors carry hints
// (internal/hint); a command-line mistake found here wraps ErrUsage. It does not start boxes
// (vm), decide policy (policy), plan the shadow (gitshadow) or decide egress (broker): it calls
// them in order.
//
// Rules:
//   - Nothing of a session reaches the guest before the guard check passed: no host value, no
//     byte of stdin, no command (a gated session waits at a vm.Gate that only opens after it).
//   - Nothing runs unaudited: the start record is written before any box is looked for; the
//     launch record before the command runs; a refused session leaves a guard-failure record.
//   - The git metadata snapshot is taken while the box is not running (before it boots), so the
//     box never gets a chance to tamper before the record is made. A session on a box that was
//     already running loads that record and first verifies (and restores) against it. While a
//     session runs, a watcher restores every change at once; when it ends, everything is
//     verified again, and a change that cannot be restored is an error.
//   - A box's network mode is fixed when it is created (its guards are rendered into it). A
//     configuration asking for a stricter mode than the box has is refused (the box had more
//     access than asked); one asking for a looser mode keeps the box's stricter mode, with a
//     notice (NetworkFor).
package session
