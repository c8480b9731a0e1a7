package gitshadow

import (
	"fmt"
	"strings"
)

// Expectation is one mount the guard check expects in the guest.
type Expectation struct {
	// Path is the mount point.
	Path string `json:"path"`
	// Kind is the shadow kind that put it there.
	Kind Kind `json:"kind"`
	// ReadOnly is true when the topmost mount at Path must be read-only (every kind but Pin).
	ReadOnly bool `json:"readOnly"`
}

// Expectations lists the mounts the guest script makes, in mount order. The guard check verifies
// each one; package vm may also compare them against /proc/self/mountinfo itself.
func (p *Plan) Expectations() []Expectation {
	return expectations(p.AllShadows())
}

// expectations lists the mounts the guest script makes for all, in AllShadows' order.
func expectations(all []Shadow) []Expectation {
	var out []Expectation
	for _, s := range all {
		if s.Kind == Watched || s.Kind == Symlink {
			continue
		}
		out = append(out, Expectation{Path: s.Path, Kind: s.Kind, ReadOnly: s.Kind != Pin})
	}
	return out
}

// guardHead checks one mount: a mount at the path must exist and, when asked, every mount there
// must carry the ro per-mount (VFS) option. It needs no privileges and starts no process: the
// shell reads /proc/self/mountinfo once (mount point, escaped as the kernel writes it, and
// per-mount options: findmnt's VFS-OPTIONS) and looks every path up in what it read. It runs
// before every session, where a box under software emulation pays tens of milliseconds for each
// process it starts.
const guardHead = `#!/bin/sh
# shellcheck disable=SC2016 # paths are quoted literally on purpose
# git corral: guard check of the git metadata shadow (rendered by package gitshadow).
# Prints one "gitshadow: FAIL ..." line per missing or writable shadow; exits 1 if any.
set -u
bad=0
nl='
'
` + shEsc + `mounts=$nl
while read -r _ _ _ _ mp opts _; do
	mounts=$mounts$mp' '$opts$nl
done </proc/self/mountinfo
expect() {
	esc "$2"
	rest=$mounts found=''
	# Every mount at the path must be read-only: a propagated copy would be a second entry.
	while :; do
		case $rest in *"$nl$k "*) ;; *) break ;; esac
		rest=${rest#*"$nl$k "}
		opts=${rest%%"$nl"*}
		found=1
		[ "$3" = ro ] || continue
		case ",$opts," in
		*,ro,*) ;;
		*)
			echo "gitshadow: FAIL $1 $2: writable ($opts)"
			bad=$((bad + 1))
			return
			;;
		esac
	done
	if [ -z "$found" ]; then
		echo "gitshadow: FAIL $1 $2: not mounted"
		bad=$((bad + 1))
	fi
}
`

// GuardChecks renders the guard check: a POSIX sh script, runnable as the box user over one SSH
// round trip, that exits 0 and prints "gitshadow: ok N" when every expected mount is in place,
// and otherwise prints one "gitshadow: FAIL KIND PATH: REASON" line per problem and exits 1.
func (p *Plan) GuardChecks() (string, error) {
	return guardChecks(p.Expectations(), ShellQuote)
}

// guardChecks renders GuardChecks for exps, quoting each path with quote.
func guardChecks(exps []Expectation, quote func(string) (string, error)) (string, error) {
	var b strings.Builder
	b.Grow(len(guardHead) + len(exps)*128)
	b.WriteString(guardHead)
	for _, e := range exps {
		q, err := quote(e.Path)
		if err != nil {
			return "", err
		}
		mode := "rw"
		if e.ReadOnly {
			mode = "ro"
		}
		fmt.Fprintf(&b, "expect %s %s %s\n", e.Kind, q, mode)
	}
	fmt.Fprintf(&b, "[ \"$bad\" -eq 0 ] || exit 1\necho \"gitshadow: ok %d\"\n", len(exps))
	return b.String(), nil
}
