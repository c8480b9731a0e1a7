// Package cover plans what the guest mounts over paths of a mounted project at every boot: the
// `hide` key's placeholders and the `box_dirs` key's directories on the box's own disk. It
// resolves each configured path on the host (Resolve), renders the root boot script that makes
// the mounts and records what the guest guard checks must find (Plan.BootScript), the root
// helper that covers one path (HelperScript), and names the expectations file those checks read
// (ExpectPath).
//
// It owns: the rules a hide or box_dirs path must meet at session start, the guest script, and
// the expectations format. It does not own: loading the keys (package policy validates them as
// written, with file and line), placing the script in the boot order (package provision), the
// guard checks' shell and Perl (provision/guest), or clone mode, which mounts nothing.
//
// The rules it enforces:
//   - A path is repository-relative, written without ".", ".." or empty components, never .git
//     in any spelling a file system aliases to it (case, HFS+ ignorable code points, NTFS
//     trailing dots and spaces, GIT~1), holds no control character, and is at most MaxPathLen
//     bytes with components of at most 255.
//   - Resolved on the host at session start: no component may be a symlink, inside or out (the
//     guest would mount over the target, wherever it points); the error names the target so
//     the user can list the real path. On a case-insensitive host file system the on-disk
//     spelling is used, because the guest mounts over a name, not over a file.
//   - A hidden path that exists must be a regular file or a directory; a box_dirs path that
//     exists must be a directory (the host creates a missing one, empty: EnsureBoxDirs).
//   - No two paths may overlap (equal, or one inside the other, compared case-folded), and none
//     may overlap a path the git shadow mounts over (Resolve's reserved paths).
//
// Decisions:
//   - A hidden path is covered by an empty, root-owned, mode 0000 placeholder of its own type,
//     bind-mounted read-only: cat and ls fail for the box user, and the host's bytes are never
//     reachable through that name. Every directory between the top level and a hidden path is
//     pinned (bind-mounted onto itself, recursively so the git shadow's mounts inside stay),
//     because a parent renamed away would carry the file to a path nobody hid at the next boot.
//     The mount is a boundary only where the box user cannot
//     unmount it: broker and offline modes. In full mode the box user has sudo, so there it is
//     hygiene (kept out of an agent's way), not a boundary.
//   - A hidden path missing at boot cannot be mounted over then. It is not refused (a hide list
//     is written for files that come and go, like .env): the script records it as absent. When
//     it appears, the guard daemon (root) covers it at the next session start with the same
//     helper the boot script uses (HelperPath, HelperScript: one implementation, through a
//     handle, never following a planted symlink); the in-band checks, which run as the box user
//     and cannot mount, refuse the session while it is there unhidden, until the daemon or the
//     next boot hides it. Hiding the parent instead would hide more than asked.
//   - The script's text depends only on the configured paths, never on what exists on the host,
//     so it does not change when files come and go; the guest decides at each boot.
//   - A box_dirs directory lives at /var/lib/corral/cover/box-dirs/<hash of its path>, owned by
//     the box user, so its contents survive reboots with the box's disk and never reach the
//     host; the host's directory of that name stays as it was (empty when git corral made it).
package cover
