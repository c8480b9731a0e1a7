// Package diff records a session base when a session starts and classifies what changed since in
// the files the host will execute (build files, package manager hooks, editor and agent configs,
// git metadata and the like).
//
// It compares raw work-tree bytes and never runs anything from the repository: no textconv, no
// external diff, no filters, no hooks.
//
// The API the rest of git corral uses:
//
//   - Record (called by start and diff --record; RecordBaseWith is the same without removing old
//     refs): write a trusted manifest under $CORRAL_HOME/sessions/<box>/ that lists every path
//     with its lstat fields and blob hash, plus the git metadata of every git dir, and keep in a
//     blob store beside it the bytes of the files the repository lacks (store.go). Nothing goes
//     into the repository: a base copies ignored files such as .env, and a ref or object there
//     would be published by a push --mirror. A box keeps its newest five bases.
//   - PruneBox (called by delete): remove all of a box's bases.
//   - Compare: walk the work tree, hash what the manifest's stat cache cannot vouch for, and
//     return a Report of Findings (host-executed changes, highest severity first) and Changes.
//     Options.ConfigPaths takes the work-tree paths the host's effective git config names, each
//     with the key and file:line that named it (from gitshadow's Plan.DiffPaths); a change to
//     one is a finding with that reason. Options.ExtraPaths takes bare paths with a generic one.
//     It removes the session bases older versions kept under refs/corral/sessions/ in the
//     repository (legacy.go) and returns the notice in Report.Notice; Record does the same.
//   - WriteText and Report.Escaped render a report for a terminal or for JSON.
//   - Catalogue and Match expose the table of host-executed files.
//
// What it does not own: deciding whether to run a build (the user does), restoring git metadata
// (gitshadow), and anything inside the box.
package diff
