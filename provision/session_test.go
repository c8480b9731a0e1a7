package provision

import (
	"fmt"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

// sessionCheck runs the check vm runs before every session: GuardCheckArgv as the box user.
func sessionCheck() string {
	return "runuser -u corral -- " + strings.Join(GuardCheckArgv(), " ")
}

// daemonQuery starts the resident guard daemon (guardd) in the booted root and prints its
// report on a line "DAEMON=…", asked by a client that the prefix runs (as the box user, with
// its groups): the daemon judges its peer's credentials as it judges the box user's sshd.
func daemonQuery(client string) string {
	return `
perl /usr/local/libexec/corral/guardd >/tmp/guardd.log 2>&1 & D=$!
i=0; until [ -S /run/corral/guard.sock ] || [ $i -gt 200 ]; do sleep 0.05; i=$((i+1)); done
printf "DAEMON="
` + client + ` perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => "/run/corral/guard.sock") or die "connect: $!"; print <$s>' || { echo "CLIENT FAILED"; cat /tmp/guardd.log; }
kill "$D"; wait "$D" 2>/dev/null || true
`
}

// checkDaemon checks the daemon's report line against the same verdict as checkReport.
func checkDaemon(t *testing.T, out, errOut, want string) {
	t.Helper()
	_, line, ok := strings.Cut(out, "DAEMON=")
	if !ok {
		t.Fatalf("no daemon report\n%s\n%s", out, errOut)
	}
	line, _, _ = strings.Cut(line, "\n")
	r, err := ParseGuardReport([]byte(line))
	if err != nil {
		t.Fatalf("daemon report %q: %v\n%s", line, err, errOut)
	}
	if want == "" {
		if !r.OK {
			t.Errorf("the daemon refuses a clean box: %v", r.Failures)
		}
		return
	}
	if r.OK || !strings.Contains(strings.Join(r.Failures, "\n"), want) {
		t.Errorf("daemon report %+v, want a failure naming %q", r, want)
	}
}

// TestSessionCheckLocked boots a whole offline bundle (lockdown in a network namespace, the
// privilege drop, the boot's attestation) and then breaks one guard at a time: the session
// check, run as the box user without sudo, must refuse each and name it.
func TestSessionCheckLocked(t *testing.T) {
	needRoot(t)
	ns := testNetns(t, "cpvsess")
	A := "/run/corral/attest"
	cases := []struct{ name, mutate, want string }{
		{"clean box", "", ""},
		{"no attestation (the drop did not finish)", "rm " + A, "attestation /run/corral/attest is missing or incomplete"},
		{"truncated attestation", "sed -i '/^end$/d' " + A, "is missing or incomplete"},
		{"attestation of another boot", "sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' " + A, "attestation is from another boot"},
		{"attestation for another mode", "sed -i 's/^mode .*/mode full/' " + A, "attestation is for mode full, not offline"},
		{"failure recorded at boot", "sed -i 's/^end$/fail sudo lets the box user run \\/bin\\/sh\\nend/' " + A, "at boot: sudo lets the box user run /bin/sh"},
		{"attestation writable by the box user", "chown corral " + A, "attestation /run/corral/attest is writable by the box user"},
		{"attestation dir writable", "chmod 1777 /run/corral", "root-run path /run/corral is writable by the box user"},
		{"helper dir writable", "chmod o+w /usr/local/libexec/corral", "root-run path /usr/local/libexec/corral is writable by the box user"},
		{"guard check owned by the box user", "chown corral /usr/local/libexec/corral/guard-check", "guard-check is writable by the box user"},
		{"docker socket", "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"/run/docker.sock\")' && chmod 666 /run/docker.sock", "container socket /run/docker.sock"},
		{"virtio port open to all", fakeVirtioPort("666"), "box user can open the virtio port /dev/virtio-ports/io.lima-vm.guest_agent.0"},
		{"virtio port root's only (control)", fakeVirtioPort("600"), ""},
		{"back in a root group", "gpasswd -a corral disk >/dev/null", "box user is in root-equivalent groups: disk"},
		{"primary group root-equivalent", "usermod -g adm corral", "box user primary group is adm"},
		{"second uid 0", "echo 'toor:x:0:0::/root:/bin/sh' >>/etc/passwd", "accounts other than root have uid 0: toor"},
	}
	g := newGuestRoot(t, privdropOptions())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := g.run(ns, prepHostile+bootAll+`
P=
`+c.mutate+`
`+sessionCheck()+`
echo "GUARD=$?"
`+daemonQuery("runuser -u corral --")+`
if [ -n "$P" ]; then kill "$P"; wait "$P" || true; fi
`)
			if code != 0 {
				t.Fatalf("setup failed, exit %d\n%s\n%s", code, out, errOut)
			}
			checkReport(t, out, errOut, c.want)
			checkDaemon(t, out, errOut, c.want)
		})
	}
	// A session that logged in before the drop (a connection kept from then) still holds the
	// dropped groups, whatever /etc/group says now.
	t.Run("session holding an old group", func(t *testing.T) {
		out, errOut, code := g.run(ns, prepHostile+bootAll+`
setpriv --reuid=corral --regid=corral --groups=$(getent group sudo | cut -d: -f3),$(getent group disk | cut -d: -f3) `+strings.Join(GuardCheckArgv(), " ")+`
echo "GUARD=$?"
`+daemonQuery("setpriv --reuid=corral --regid=corral --groups=$(getent group sudo | cut -d: -f3),$(getent group disk | cut -d: -f3)")+`
`)
		if code != 0 {
			t.Fatalf("setup failed, exit %d\n%s\n%s", code, out, errOut)
		}
		checkReport(t, out, errOut, "the session holds root-equivalent groups: disk sudo")
		checkDaemon(t, out, errOut, "the session holds root-equivalent groups: disk sudo")
	})
}

// checkReport reads the JSON report before GUARD= and checks it passed (want "") or failed
// naming want.
func checkReport(t *testing.T, out, errOut, want string) {
	t.Helper()
	r, err := ParseGuardReport([]byte(lastJSON(strings.Split(out, "GUARD=")[0])))
	if err != nil {
		t.Fatalf("no JSON report: %v\n%s\n%s", err, out, errOut)
	}
	if want == "" {
		if !r.OK || !strings.Contains(out, "GUARD=0") {
			t.Fatalf("clean box reported %+v\n%s\n%s", r, out, errOut)
		}
		return
	}
	if r.OK || strings.Contains(out, "GUARD=0") {
		t.Fatalf("session check passed, want a failure naming %q\n%s\n%s", want, out, errOut)
	}
	if !strings.Contains(strings.Join(r.Failures, "\n"), want) {
		t.Errorf("failures %q do not name %q", r.Failures, want)
	}
}

// TestSessionCheckShadow: in full mode the session check verifies the git shadow's mounts from
// /run/corral/shadow.expect in one pass over the mount table: present, and read-only where the
// line says ro, for paths with spaces, quotes and backslashes too (mountinfo escapes them).
func TestSessionCheckShadow(t *testing.T) {
	needRoot(t)
	opts := privdropOptions()
	opts.Network = policy.NetworkFull
	opts.GitShadowScript = "#!/bin/sh\n:\n"
	weird := `/home/corral/it's a "repo"\x`
	prep := `set -e
useradd -m -U -u 47113 -s /bin/bash corral
sh /corral/05-box.sh >/dev/null && sh /corral/10-base.sh >/dev/null
mkdir -p /run/corral '` + strings.ReplaceAll(weird, "'", `'\''`) + `/.git/hooks' /home/corral/p/.git
W='` + strings.ReplaceAll(weird, "'", `'\''`) + `'
mount --bind "$W/.git/hooks" "$W/.git/hooks" && mount -o remount,bind,ro "$W/.git/hooks"
mount --bind /home/corral/p/.git /home/corral/p/.git
printf 'ro %s\nrw %s\n' "$W/.git/hooks" /home/corral/p/.git >/run/corral/shadow.expect
set +e
`
	cases := []struct{ name, mutate, want string }{
		{"every mount in place", "", ""},
		{"read-only shadow made writable", `mount -o remount,bind,rw "$W/.git/hooks"`, `git shadow mount ` + weird + `/.git/hooks is writable`},
		{"a writable mount stacked on the read-only one", `mount --bind /tmp "$W/.git/hooks"`, "/.git/hooks is writable"},
		{"pin unmounted", "umount /home/corral/p/.git", "git shadow mount /home/corral/p/.git is not in place"},
		{"expectations missing", "rm /run/corral/shadow.expect", "git shadow expectations /run/corral/shadow.expect are missing"},
		// The path is still in the table, as the root of another mount (field 4), not as a
		// mount point (field 5).
		{"pin unmounted, its path another mount's root", "umount /home/corral/p/.git && mkdir -p /mnt/cpv && mount --bind /home/corral/p/.git /mnt/cpv",
			"git shadow mount /home/corral/p/.git is not in place"},
		// Over 32 expectations the check takes one pass over the table instead of a search each.
		{"many mounts, one writable", `for i in $(seq 40); do
	d="/home/corral/many dir/$i"; mkdir -p "$d"; mount --bind "$d" "$d"
	[ "$i" = 17 ] || mount -o remount,bind,ro "$d"
	printf 'ro %s\n' "$d" >>/run/corral/shadow.expect
done`, "git shadow mount /home/corral/many dir/17 is writable"},
		{"many mounts, all read-only", `for i in $(seq 40); do
	d="/home/corral/many dir/$i"; mkdir -p "$d"; mount --bind "$d" "$d"; mount -o remount,bind,ro "$d"
	printf 'ro %s\n' "$d" >>/run/corral/shadow.expect
done`, ""},
	}
	g := newGuestRoot(t, opts)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := g.run("", prep+c.mutate+"\n"+sessionCheck()+"\necho \"GUARD=$?\"\n"+daemonQuery("runuser -u corral --"))
			if code != 0 {
				t.Fatalf("setup failed, exit %d\n%s\n%s", code, out, errOut)
			}
			checkReport(t, out, errOut, c.want)
			checkDaemon(t, out, errOut, c.want)
		})
	}
}

// TestSessionCheckInband: sourced by the box user's bash before a command, as `git corral run`
// does, the session check writes its marker line on stderr first, lets the command run only
// when every guard holds, and leaves the caller's shell as it found it (variables, options,
// functions).
func TestSessionCheckInband(t *testing.T) {
	needRoot(t)
	ns := testNetns(t, "cpvinb")
	inband := `runuser -u corral -- bash -c 'set -u; out=kept; ` + InbandGuardPrefix() + ` && echo "RAN out=$out opts=$- fns=$(declare -F | grep -c __corral)"'`
	cases := []struct{ name, mutate, want string }{
		{"clean box", "", ""},
		{"back in a root group", "gpasswd -a corral disk >/dev/null", "box user is in root-equivalent groups: disk"},
		{"attestation of another boot", "sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' /run/corral/attest", "attestation is from another boot"},
	}
	g := newGuestRoot(t, privdropOptions())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := g.run(ns, prepHostile+bootAll+"\nP=\n"+c.mutate+"\n"+inband+` 2>/tmp/inband.err
echo "EXIT=$?"
if [ -n "$P" ]; then kill "$P"; wait "$P" || true; fi
cat /tmp/inband.err
`)
			if code != 0 {
				t.Fatalf("setup failed, exit %d\n%s\n%s", code, out, errOut)
			}
			i := strings.Index(out, "\x1ecorral-guard-check ")
			if i < 0 {
				t.Fatalf("no marker line on stderr:\n%s\n%s", out, errOut)
			}
			marker := strings.SplitN(out[i+len("\x1ecorral-guard-check "):], "\n", 2)[0]
			r, err := ParseGuardReport([]byte(marker))
			if err != nil {
				t.Fatalf("marker report %q: %v", marker, err)
			}
			ran := strings.Contains(out, "RAN ")
			if c.want == "" {
				if !r.OK || !ran {
					t.Fatalf("clean box: report %+v, command ran %v\n%s", r, ran, out)
				}
				var kept, opts, fns string
				fmt.Sscanf(out[strings.Index(out, "RAN "):], "RAN out=%s opts=%s fns=%s", &kept, &opts, &fns)
				if kept != "kept" || !strings.Contains(opts, "u") || strings.Contains(opts, "f") || fns != "0" {
					t.Errorf("the caller's shell changed (want out=kept, -u still set, -f not, no __corral functions):\n%s", out)
				}
				return
			}
			if r.OK || ran || !strings.Contains(strings.Join(r.Failures, "\n"), c.want) {
				t.Errorf("report %+v (command ran %v), want a failure naming %q\n%s", r, ran, c.want, out)
			}
		})
	}
}
