// Package report owns the session record behind git corral report: one JSON document per
// session (or per box), built from host-side records only, with a sha256 per section and one
// digest over them, signed on request in the SSHSIG format `ssh-keygen -Y verify` checks.
//
// What it owns:
//   - Build (build.go): reads the audit log (sessions.go), the box's metadata and golden base,
//     the broker's egress log (egress.go; git-push decisions are its entries with a ref), the
//     policy the session started under (the snapshot its start record names, stored under
//     $CORRAL_HOME/logs/policies by the session; the configuration loaded now for a session
//     from before sessions stored one, and the section's "at" says which), the host's diff check, the box's snapshots and the
//     commits made and fetched back (commits.go, read with go-git: no git process, no hook, no
//     repository config) and assembles a Record.
//   - Encode and Check (hash.go): the document's bytes and its integrity check.
//   - Sign, VerifySignature (sshsig.go), LoadSigner (key.go), AllowedSigners (allowed.go), and
//     the signed file's layout, Split (file.go).
//
// What it does not own: loading the policy (package policy), finding the box or the project
// (the command), the diff's classification (package diff), and anything inside the box.
//
// Rules:
//   - Nothing in a record comes from a file the box can write, with two named exceptions that
//     the record says are the box's own claims: the commits of a mount-mode checkout (its .git
//     is the box's to write; hashes bind their content, but dates and messages are the box's)
//     and the repository layer of the policy (.corral.toml), whose change during the session the
//     diff section shows.
//   - Names, never secrets: a command is its name, its argument count and the sha256 of its
//     argv (the audit log holds the argv); `env` values of the policy are replaced by their
//     sha256.
//   - A section that cannot be read says why in its "unavailable" member; it is never left out
//     silently and never guessed.
//   - Strings from the box (paths, commit summaries, egress hosts) are escaped with
//     internal/visible, as diff --json does, because a record is read on terminals.
package report
