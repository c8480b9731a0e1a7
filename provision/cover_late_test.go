package provision

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/cover"
	"github.com/git-corral/git-corral/policy"
)

// coverLatePrep makes a booted box whose cover script recorded later.env absent: the
// placeholders, the expectations file and the helper (package cover's) in place.
const coverLatePrep = `set -e
useradd -m -U -u 47113 -s /bin/bash corral
sh /corral/05-box.sh >/dev/null && sh /corral/10-base.sh >/dev/null
export P='/home/corral/my project'
S=/var/lib/corral/cover
mkdir -p /run/corral "$S/empty-dir" "$P"
chown corral "$P"
: >"$S/empty-file"; chmod 0000 "$S/empty-dir" "$S/empty-file"
install -m 0700 -o root -g root /corral/cover-hide /run/corral/cover-hide
printf 'absent %s\n' "$P/later.env" >/run/corral/cover.expect
echo SHADOW >/root/shadow-like; chmod 0644 /root/shadow-like; chmod 0755 /root
set +e
`

// TestGuardDaemonHidesLatePath: a hidden path absent at boot that the box user made later is
// hidden by the guard daemon at the next session start, and the session is let through; the
// in-band checks, which cannot mount, refuse it until then and pass once it is covered. What
// the box user plants instead of a file (a symlink to a root file, a FIFO) is refused and
// nothing is mounted over the symlink's target. The control: a session outside PID 1's mount
// namespace is refused and the file stays readable, so it is the daemon's step that hides it.
func TestGuardDaemonHidesLatePath(t *testing.T) {
	needRoot(t)
	opts := privdropOptions()
	opts.Network = policy.NetworkFull
	opts.CoverScript = "#!/bin/sh\n:\n"
	g := newGuestRoot(t, opts)
	h, err := cover.HelperScript("/home/corral/my project")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.dir, "cover-hide"), []byte(h), 0o600); err != nil {
		t.Fatal(err)
	}
	// pidns runs the daemon and its client as PID 1's namespace (a new PID namespace, whose
	// PID 1 is this shell), as sshd runs in the box.
	pidns := func(s string) string { return "unshare -p -f --mount-proc sh -c " + shq(s) + "\n" }
	after := `runuser -u corral -- timeout 5 cat "$P/later.env" && echo READ-OK
printf 'INBAND='; ` + sessionCheck() + ` | tail -n 1
[ "$(cat /root/shadow-like)" = SHADOW ] && ! findmnt -rn --mountpoint /root/shadow-like >/dev/null && echo TARGET-INTACT
`
	cases := []struct {
		name, plant, run string
		daemon, inband   string // "" for a pass, else a failure the report must hold
		readable         bool
	}{
		{"file, daemon in PID 1's namespace", `echo LATER >"$P/later.env"`, pidns(daemonQuery("runuser -u corral --") + after), "", "", false},
		{"file, daemon in another namespace (control)", `echo LATER >"$P/later.env"`, daemonQuery("runuser -u corral --") + after,
			"later.env appeared after the box booted and is not hidden", "later.env appeared after the box booted and is not hidden", true},
		{"file, in-band check only", `echo LATER >"$P/later.env"`, after, "", "this check cannot hide it", true},
		{"symlink to a root file", `ln -s /root/shadow-like "$P/later.env"`, pidns(daemonQuery("runuser -u corral --") + after),
			"later.env appeared after the box booted and cannot be hidden", "later.env appeared after the box booted and is not hidden", true},
		{"FIFO", `mkfifo "$P/later.env"`, pidns(daemonQuery("runuser -u corral --") + after),
			"later.env appeared after the box booted and cannot be hidden", "later.env appeared after the box booted and is not hidden", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := g.run("", coverLatePrep+"runuser -u corral -- sh -c "+shq(c.plant)+"\n"+c.run)
			if code != 0 {
				t.Fatalf("setup failed, exit %d\n%s\n%s", code, out, errOut)
			}
			if strings.Contains(c.run, "DAEMON=") {
				checkDaemon(t, out, errOut, c.daemon)
			}
			checkDaemon(t, strings.Replace(out[strings.LastIndex(out, "INBAND="):], "INBAND=", "DAEMON=", 1), errOut, c.inband)
			if got := strings.Contains(out, "READ-OK"); got != c.readable {
				t.Errorf("the box user read later.env: %v, want %v\n%s\n%s", got, c.readable, out, errOut)
			}
			if !strings.Contains(out, "TARGET-INTACT") {
				t.Errorf("a root file was mounted over or changed\n%s\n%s", out, errOut)
			}
		})
	}
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
