// Package diff records a session base when a session starts and classifies what changed since in
// the files the host will execute (build files, package manager hooks, editor and agent configs,
// git metadata and the like).
//
// It compares raw work-tree bytes and never runs anything from the repository: no textconv, no
// external diff, no filters, no hooks.
//
// The API the rest of git corral uses:
//
//   - RecordBase / RecordBaseWith (called by start): write the work tree as a commit under
//     refs/corral/sessions/<box>/<timestamp> with go-git (index and HEAD untouched) and a trusted
//     manifest under $CORRAL_HOME/sessions/<box>/ that lists every path with its lstat fields and
//     blob hash, plus the git metadata of every git dir.
//   - Compare: walk the work tree, hash what the manifest's stat cache cannot vouch for, and
//     return a Report of Findings (host-executed changes, highest severity first) and Changes.
//     Options.ConfigPaths takes the work-tree paths the host's effective git config names, each
//     with the key and file:line that named it (from gitshadow's Plan.DiffPaths); a change to
//     one is a finding with that reason. Options.ExtraPaths takes bare paths with a generic one.
//   - WriteText and Report.Escaped render a report for a terminal or for JSON.
//   - Catalogue and Match expose the table of host-executed files.
//
// What it does not own: deciding whether to run a build (the user does), restoring git metadata
// (gitshadow), and anything inside the box.
package diff
