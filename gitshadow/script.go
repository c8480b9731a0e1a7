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
// missing, of the wrong type, or reached through a symlink (its parent's physical path plus its
// name must equal the path, and the path itself is no symlink), so a symlink planted by a box
// cannot redirect a root bind mount elsewhere in the guest. Each skips a path that is already a
// mount point, so the script can run again in the same boot.
//
// The script runs at every boot and golden-state resume, where a box under software emulation
// pays tens of milliseconds for every process it starts, so the helpers use shell builtins
// wherever they can: the mount table is read once from /proc/self/mountinfo by the shell itself
// and kept up to date as the script mounts, and paths are checked with cd -P and test. A pin or
// a guest-local copy is mounted by one mount(8) call (util-linux binds and makes the mount
// private in one command), a read-only view of a host path by two (see ro_bind).
// TestGuestScriptSpawnBudget holds the number of processes to a budget.
// shEsc is the shell function both rendered scripts (the shadow and its guard check) use to write
// a path as /proc/self/mountinfo does.
const shEsc = `# esc sets k to $1 as /proc/self/mountinfo writes a mount point: space, tab, newline and
# backslash as octal escapes.
esc() {
	case $1 in
	*' '* | *'	'* | *"$nl"* | *\\*) ;;
	*)
		k=$1
		return 0
		;;
	esac
	k='' r=$1
	while [ -n "$r" ]; do
		c=${r%"${r#?}"}
		r=${r#?}
		case $c in
		' ') k="$k\\040" ;;
		'	') k="$k\\011" ;;
		"$nl") k="$k\\012" ;;
		\\) k="$k\\134" ;;
		*) k=$k$c ;;
		esac
	done
}
`

const scriptHead = `#!/bin/sh
# shellcheck disable=SC2016 # paths are quoted literally on purpose
# git corral: git metadata shadow, rendered by package gitshadow from the host's plan.
# Runs as root in the guest at every boot, before any session; idempotent within a boot.
# Every host-executed git file is replaced by a read-only view so nothing the box writes there
# reaches the host's git. The host verifies the same files independently.
set -eu
umask 022
unset CDPATH
cd /
state=` + GuestStateDir + `
nl='
'

fail() {
	echo "gitshadow: $*" >&2
	exit 1
}

` + shEsc + `
# mounted holds every mount point in this namespace, escaped, one per line: read once here
# (read is a builtin: no process per lookup), and added to by add_mounted for each mount made.
mounted=$nl
while read -r _ _ _ _ mp _; do
	mounted=$mounted$mp$nl
done </proc/self/mountinfo

is_mounted() {
	esc "$1"
	case $mounted in *"$nl$k$nl"*) return 0 ;; esac
	return 1
}

add_mounted() {
	esc "$1"
	mounted=$mounted$k$nl
}

# check_real refuses a path that is not absolute and canonical, is missing, is a symlink, or is
# reached through one: cd -P resolves every symlink on the way to the parent, so the parent's
# physical path ($PWD) plus the name must be the path itself.
check_real() {
	case $1 in /*) ;; *) fail "$1: not an absolute path" ;; esac
	case ${1##*/} in '' | . | ..) fail "$1: not a canonical path" ;; esac
	[ -L "$1" ] && fail "$1: reached through a symlink (it is one)"
	[ -e "$1" ] || fail "$1: missing"
	parent=${1%/*}
	cd -P -- "${parent:-/}" || fail "$1: missing"
	real=${PWD%/}/${1##*/}
	cd /
	[ "$real" = "$1" ] || fail "$1: reached through a symlink ($real)"
}

pin() {
	check_real "$1"
	[ -d "$1" ] || fail "$1: not a directory"
	is_mounted "$1" && return 0
	# --make-private detaches the new mount from its source's peer group. The guest's mounts
	# are shared (systemd), so without it a mount made inside a pinned git dir would propagate
	# back onto the covered directory as a second, writable mount at the same path.
	mount --bind --make-private -- "$1" "$1" || fail "$1: cannot pin"
	add_mounted "$1"
}

# ro_bind mounts $1 read-only and private at $2. The read-only remount is a command of its own:
# util-linux 2.38 would do it in the bind's command, but then with ro as the only flag, dropping
# the nosuid, nodev or noexec the bind took from the mount of $1 (the project's mount).
ro_bind() {
	mount --bind --make-private -- "$1" "$2" || fail "$2: cannot bind"
	add_mounted "$2"
	mount -o remount,bind,ro -- "$2" || fail "$2: cannot make read-only"
}

# local_bind mounts the guest-local copy $state/$2 read-only and private at $1 in one command.
# Its flags are all set here, so nothing is taken from the mount that holds $state.
local_bind() {
	mount --bind --make-private -o ro,nosuid,nodev,noexec -- "$state/$2" "$1" || fail "$1: cannot bind read-only"
	add_mounted "$1"
}

readonly_path() {
	check_real "$1"
	is_mounted "$1" || ro_bind "$1" "$1"
}

copy_file() {
	check_real "$1"
	[ -f "$1" ] || fail "$1: not a regular file"
	is_mounted "$1" && return 0
	install -o 0 -g 0 -m 0444 -- "$1" "$state/$2.tmp" || fail "$1: cannot copy"
	mv -f -- "$state/$2.tmp" "$state/$2"
	local_bind "$1" "$2"
}

empty_dir() {
	check_real "$1"
	[ -d "$1" ] || fail "$1: not a directory"
	is_mounted "$1" && return 0
	if [ -e "$state/$2" ] || [ -L "$state/$2" ]; then
		rm -rf -- "${state:?}/$2"
	fi
	mkdir -m 0555 -- "$state/$2"
	local_bind "$1" "$2"
}

# git_mount makes a host directory mounted for git besides the project (a linked worktree's
# common dir) nosuid and nodev, as the privilege drop makes the project mount, keeping it
# read-only if it is (the topmost mount's own or its file system's ro), and detaches it from its
# peers like every other mount of the shadow.
git_mount() {
	check_real "$1"
	is_mounted "$1" || return 0
	esc "$1"
	ro=
	while read -r _ _ _ _ mp opts rest; do
		[ "$mp" = "$k" ] || continue
		ro=
		case ",$opts,${rest##* }," in *,ro,*) ro=ro, ;; esac
	done </proc/self/mountinfo
	mount -o "remount,bind,${ro}nosuid,nodev" --make-private -- "$1" || fail "$1: cannot make nosuid"
}

install -d -o 0 -g 0 -m 0755 -- "$state"
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
