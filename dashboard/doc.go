// Package dashboard is `git corral dashboard`: a terminal UI of every box at a glance.
//
// It owns:
//
//   - Loading (data.go): one Snapshot of every box — its Lima state, network mode, whether a
//     session holds it, how long it has been idle, and its egress denials — read from
//     $CORRAL_HOME (box metadata, session marks, egress logs) on every poll, so a denial the
//     broker logs appears without a restart; a log is parsed again only when it changed
//     (egresscache.go).
//   - The model (model.go): selection, the list and per-box egress views, the keys, and the
//     actions, which it turns into `git corral` command lines (actions.go).
//   - The view (view.go): plain lines laid out for the terminal's width, coloured only when the
//     caller says colour is on (a terminal, NO_COLOR unset, TERM not dumb).
//   - Run (run.go): the bubbletea program on the caller's terminal.
//
// It does not own:
//
//   - The boxes. Every action (stop, start, shell) runs git corral's own command as a child
//     process with the terminal handed over, never limactl, so guards, locks and the audit log
//     apply exactly as they do on the command line.
//   - Reading Lima's store or the egress log format: the caller passes vm.Manager.Inspect and the
//     egress command's log reader in (Loader), so there is one reader of each.
//   - Deciding whether there is a terminal: the command refuses to start without one.
//
// Rules:
//
//   - Everything shown that comes from a file — box names, project paths, hosts, reasons — is
//     untrusted and passes through internal/visible before it reaches the terminal: a hostile
//     host name in the egress log cannot drive the terminal or hide what the user reads.
//   - Reading is read-only and never blocks on a live session: the session mark's lock is only
//     tried, never waited for.
//   - No line is wider than the terminal: columns drop as it narrows, then lines are cut.
package dashboard
