package gitshadow

import (
	"errors"
	"fmt"
	"github.com/git-corral/git-corral/internal/shellquote"
	"strings"
)

// GuestStateDir is where the guest script keeps its guest-local copies and empty directories.
// It is on the guest's own disk, owned by root, outside anything mounted from the host.
const GuestStateDir = "/var/lib/corral/gitshadow"

// ErrUnsafePath is returned for a path that cannot be put into a shell script safely.
var ErrUnsafePath = errors.New("path cannot be quoted for the shell")

// ShellQuote quotes s as one POSIX sh word in single quotes. It refuses NUL, newline and
// carriage return, which no script line should carry even when quoted (a log or a terminal would
// show a different command than the one that runs), and an empty string.
func ShellQuote(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: %q", ErrUnsafePath, s)
	}
	q, err := shellquote.Line(s)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrUnsafePath, s)
	}
	return q, nil
}

// scriptHead defines the helpers every action line calls. Each helper refuses a path that is
// missing, of the wrong type, or reached through a symlink (realpath must equal the path), so a
// symlink planted by a box cannot redirect a root bind mount elsewhere in the guest. Each skips a
// path that is already a mount point, so the script can run again in the same boot.
const scriptHead = `#!/bin/sh
# shellcheck disable=SC2016 # paths are quoted literally on purpose
# git corral: git metadata shadow, rendered by package gitshadow from the host's plan.
# Runs as root in the guest at every boot, before any session; idempotent within a boot.
# Every host-executed git file is replaced by a read-only view so nothing the box writes there
# reaches the host's git. The host verifies the same files independently.
set -eu
umask 022
state=` + GuestStateDir + `

fail() {
	echo "gitshadow: $*" >&2
	exit 1
}

is_mounted() {
	findmnt -rn --mountpoint "$1" >/dev/null 2>&1
}

check_real() {
	real=$(realpath -e -- "$1") || fail "$1: missing"
	[ "$real" = "$1" ] || fail "$1: reached through a symlink ($real)"
}

pin() {
	check_real "$1"
	[ -d "$1" ] || fail "$1: not a directory"
	is_mounted "$1" && return 0
	mount --bind -- "$1" "$1" || fail "$1: cannot pin"
	private "$1"
}

# private detaches a new mount from its source's peer group. The guest's mounts are shared
# (systemd), so without it a mount made inside a pinned git dir would propagate back onto the
# covered directory as a second, writable mount at the same path.
private() {
	mount --make-private -- "$1" || fail "$1: cannot make private"
}

ro_bind() {
	mount --bind -- "$1" "$2" || fail "$2: cannot bind"
	private "$2"
	mount -o remount,bind,ro -- "$2" || fail "$2: cannot make read-only"
}

readonly_path() {
	check_real "$1"
	is_mounted "$1" || ro_bind "$1" "$1"
}

copy_file() {
	check_real "$1"
	[ -f "$1" ] || fail "$1: not a regular file"
	is_mounted "$1" && return 0
	cp -- "$1" "$state/$2.tmp" || fail "$1: cannot copy"
	chown 0:0 "$state/$2.tmp"
	chmod 0444 "$state/$2.tmp"
	mv -f -- "$state/$2.tmp" "$state/$2"
	ro_bind "$state/$2" "$1"
}

empty_dir() {
	check_real "$1"
	[ -d "$1" ] || fail "$1: not a directory"
	is_mounted "$1" && return 0
	rm -rf -- "${state:?}/$2"
	mkdir -m 0555 -- "$state/$2"
	ro_bind "$state/$2" "$1"
}

# git_mount makes a host directory mounted for git besides the project (a linked worktree's
# common dir) nosuid and nodev, as the privilege drop makes the project mount, keeping it
# read-only if it is, and detaches it from its peers like every other mount of the shadow.
git_mount() {
	check_real "$1"
	findmnt -rn --mountpoint "$1" >/dev/null 2>&1 || return 0
	ro=
	case ",$(findmnt -rn -o OPTIONS --mountpoint "$1" | tail -n 1)," in *,ro,*) ro=ro, ;; esac
	mount -o "remount,bind,${ro}nosuid,nodev" -- "$1" || fail "$1: cannot make nosuid"
	private "$1"
}

mkdir -p -- "$state"
chown 0:0 "$state"
chmod 0755 "$state"
`

// GuestScript renders the complete POSIX sh script that applies the plan in the guest. Mounts
// are made parents first, pins before the shadows inside them; a path that did not exist at
// discovery is skipped (the host snapshot watches it instead). It fails on any path that cannot
// be quoted.
func (p *Plan) GuestScript() (string, error) {
	return p.guestScript(p.AllShadows(), ShellQuote)
}

// guestScript renders GuestScript for all (the plan's AllShadows), quoting each path with quote.
func (p *Plan) guestScript(all []Shadow, quote func(string) (string, error)) (string, error) {
	var b strings.Builder
	b.Grow(len(scriptHead) + len(all)*96)
	b.WriteString(scriptHead)
	for _, d := range p.OutsideTopLevel { // before the pins: a bind mount keeps its source's flags
		q, err := quote(d)
		if err != nil {
			return "", err
		}
		b.WriteString("git_mount " + q + "\n")
	}
	n := 0
	for _, s := range all {
		line, err := scriptLine(s, &n, quote)
		if err != nil {
			return "", err
		}
		if line != "" {
			b.WriteString(line + "\n")
		}
	}
	fmt.Fprintf(&b, "echo \"gitshadow: %d shadows applied\"\n", n)
	return b.String(), nil
}

// scriptLine is the helper call that applies one shadow, or "" for a watched path. n numbers
// the guest-local copies.
func scriptLine(s Shadow, n *int, quote func(string) (string, error)) (string, error) {
	if s.Kind == Watched || s.Kind == Symlink {
		return "", nil
	}
	q, err := quote(s.Path)
	if err != nil {
		return "", err
	}
	*n++
	switch s.Kind {
	case Pin:
		return "pin " + q, nil
	case ReadOnly:
		return "readonly_path " + q, nil
	case Copy:
		return fmt.Sprintf("copy_file %s s%d", q, *n), nil
	case Empty:
		return fmt.Sprintf("empty_dir %s s%d", q, *n), nil
	}
	return "", fmt.Errorf("render shadow of %q: unknown kind %q", s.Path, s.Kind)
}
