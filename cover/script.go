package cover

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/git-corral/git-corral/internal/shellquote"
)

// Guest paths of the plan's state.
const (
	// ExpectPath is the root-owned file the boot script writes and the guard checks read: one
	// line per configured path, "hide PATH" (covered, the topmost mounts read-only), "absent
	// PATH" (a hidden path missing at boot, which must stay missing), "pin PATH" (a directory
	// holding a hidden path, mounted onto itself so it cannot be renamed) or "boxdir PATH" (a
	// box_dirs directory mounted from the guest's disk).
	ExpectPath = "/run/corral/cover.expect"
	// GuestStateDir holds the placeholders and the box_dirs directories, on the guest's disk.
	GuestStateDir = "/var/lib/corral/cover"
)

// scriptHead defines the helpers. A path reached through a symlink (realpath must equal it) or
// of another type than a file or directory fails the script, so the expectations file is not
// written and every session is refused until the box boots without it. A path already mounted
// over is skipped, so the script can run again in the same boot.
const scriptHead = `#!/bin/sh
# shellcheck disable=SC2016 # paths are quoted literally on purpose
# git corral: hide and box_dirs (rendered by package cover). Runs as root at every boot, after
# the git shadow and before the repository's own provision scripts.
set -eu
umask 022
state=` + GuestStateDir + `
expect=` + ExpectPath + `
helper=` + HelperPath + `

fail() {
	echo "cover: $*" >&2
	exit 1
}

is_mounted() {
	findmnt -rn --mountpoint "$1" >/dev/null 2>&1
}

check_real() {
	real=$(realpath -e -- "$1") || fail "$1: cannot be resolved"
	[ "$real" = "$1" ] || fail "$1: reached through a symlink ($real)"
}

# hide covers $1 with the empty placeholder of its type, read-only, through the helper (the
# guard daemon runs the same helper for a path that appears later), or records it absent.
hide() {
	if [ ! -e "$1" ] && [ ! -L "$1" ]; then
		echo "absent $1" >>"$expect.tmp"
		return 0
	fi
	check_real "$1"
	perl "$helper" "$1" || fail "$1: cannot hide"
	echo "hide $1" >>"$expect.tmp"
}

# pin bind-mounts the directory $1 onto itself, with whatever is mounted inside it (the git
# shadow's mounts), so the box user cannot rename it: rename(2) of a mount point fails with
# EBUSY. A hidden path's parent renamed away would leave its file unhidden at the next boot.
pin() {
	[ -d "$1" ] || return 0
	check_real "$1"
	if ! is_mounted "$1"; then
		mount --rbind -- "$1" "$1" || fail "$1: cannot pin"
		mount --make-rprivate -- "$1" || fail "$1: cannot make private"
	fi
	echo "pin $1" >>"$expect.tmp"
}

# box_dir mounts the guest directory $state/box-dirs/$2, owned by the box user, over $1. A
# missing $1 is made by the box user (empty on the host, as the host makes it too).
box_dir() {
	[ -e "$1" ] || [ -L "$1" ] || runuser -u "$user" -- mkdir -p -- "$1" || fail "$1: cannot create"
	check_real "$1"
	[ -d "$1" ] || fail "$1: not a directory"
	if ! is_mounted "$1"; then
		mkdir -p -- "$state/box-dirs/$2"
		chown -- "$user:$(id -g -- "$user")" "$state/box-dirs/$2"
		chmod 0755 "$state/box-dirs/$2"
		mount --bind -- "$state/box-dirs/$2" "$1" || fail "$1: cannot mount the box's directory"
		mount --make-private -- "$1" || fail "$1: cannot make private"
	fi
	echo "boxdir $1" >>"$expect.tmp"
}

rm -f -- "$expect" "$expect.tmp"
mkdir -p /run/corral "$state/box-dirs"
chown 0:0 /run/corral "$state" "$state/box-dirs"
chmod 0755 /run/corral "$state" "$state/box-dirs"
[ -d "$state/empty-dir" ] || mkdir -- "$state/empty-dir"
[ -f "$state/empty-file" ] || : >"$state/empty-file"
chown 0:0 "$state/empty-dir" "$state/empty-file"
chmod 0000 "$state/empty-dir" "$state/empty-file"
: >"$expect.tmp"
`

// BootScript renders the guest script that applies the plan as root at every boot, for the box
// user user (the owner of the box_dirs directories). Each path is quoted by shellquote.Line,
// which refuses newlines, so each expectations line is one path.
func (p *Plan) BootScript(user string) (string, error) {
	if !path.IsAbs(p.TopLevel) || path.Clean(p.TopLevel) != p.TopLevel {
		return "", fmt.Errorf("render the cover script: project directory %q is not a clean absolute path", p.TopLevel)
	}
	u, err := shellquote.Line(user)
	if err != nil || user == "" || strings.HasPrefix(user, "-") {
		return "", fmt.Errorf("render the cover script: box user %q cannot be quoted", user)
	}
	var b strings.Builder
	b.WriteString(scriptHead)
	b.WriteString("user=" + u + "\n")
	h, err := HelperScript(p.TopLevel)
	if err != nil {
		return "", err
	}
	b.WriteString("rm -f -- \"$helper\"\ncat >\"$helper.tmp\" <<'CORRAL_COVER_HELPER'\n" + h + "CORRAL_COVER_HELPER\n")
	b.WriteString("chown 0:0 \"$helper.tmp\"\nchmod 0700 \"$helper.tmp\"\nmv -f -- \"$helper.tmp\" \"$helper\"\n")
	for _, d := range p.pinDirs() {
		q, err := shellquote.Line(path.Join(p.TopLevel, d))
		if err != nil {
			return "", fmt.Errorf("render the cover script: directory %q: %w", d, err)
		}
		b.WriteString("pin " + q + "\n")
	}
	for _, e := range p.Hide {
		q, err := shellquote.Line(path.Join(p.TopLevel, e.Rel))
		if err != nil {
			return "", fmt.Errorf("render the cover script: %s[%d] %q: %w", e.Key, e.Index, e.Rel, err)
		}
		b.WriteString("hide " + q + "\n")
	}
	for _, e := range p.BoxDirs {
		q, err := shellquote.Line(path.Join(p.TopLevel, e.Rel))
		if err != nil {
			return "", fmt.Errorf("render the cover script: %s[%d] %q: %w", e.Key, e.Index, e.Rel, err)
		}
		b.WriteString("box_dir " + q + " " + BoxDirName(e.Rel) + "\n")
	}
	b.WriteString("chmod 0644 \"$expect.tmp\"\nmv -f -- \"$expect.tmp\" \"$expect\"\n")
	fmt.Fprintf(&b, "echo \"cover: %d hidden, %d box_dirs\"\n", len(p.Hide), len(p.BoxDirs))
	return b.String(), nil
}

// BoxDirName is the name of rel's directory under GuestStateDir/box-dirs: a hash, so that no
// repository path can name anything else there.
func BoxDirName(rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return hex.EncodeToString(sum[:8])
}

// pinDirs are the directories between the top level and each hidden path, parents first, each
// once: the guest pins them so that none can be renamed away from under a cover.
func (p *Plan) pinDirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range p.Hide {
		parts := strings.Split(e.Rel, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	sort.Strings(out)
	return out
}
