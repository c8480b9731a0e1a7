package provision

import (
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

// TestGuardChecksCover: with a hide and box_dirs script rendered, all three guard checks (the
// session check as the box user, the resident daemon, the deep check as root) verify
// /run/corral/cover.expect: each hidden path covered and read-only, each box_dirs directory
// mounted, each directory holding a hidden path pinned, each path absent at boot still absent. The first case is the control: the same
// checks pass when every mount is in place. Paths hold a space (mountinfo escapes it).
func TestGuardChecksCover(t *testing.T) {
	needRoot(t)
	opts := privdropOptions()
	opts.Network = policy.NetworkFull
	opts.CoverScript = "#!/bin/sh\n:\n"
	prep := `set -e
useradd -m -U -u 47113 -s /bin/bash corral
sh /corral/05-box.sh >/dev/null && sh /corral/10-base.sh >/dev/null
P='/home/corral/my project'
S=/var/lib/corral/cover
mkdir -p /run/corral "$S/empty-dir" "$S/box-dirs/x" "$P/my secrets" "$P/node_modules"
: >"$S/empty-file"; : >"$P/token.txt"; chmod 0000 "$S/empty-dir" "$S/empty-file"
for h in "$P/my secrets:$S/empty-dir" "$P/token.txt:$S/empty-file"; do
	mount --bind "${h#*:}" "${h%%:*}"; mount --make-private "${h%%:*}"; mount -o remount,bind,ro "${h%%:*}"
done
mount --bind "$S/box-dirs/x" "$P/node_modules"
mkdir -p "$P/con fig"; mount --bind "$P/con fig" "$P/con fig"
printf 'pin %s\nhide %s\nhide %s\nabsent %s\nboxdir %s\n' "$P/con fig" "$P/my secrets" "$P/token.txt" "$P/later.env" "$P/node_modules" >/run/corral/cover.expect
set +e
`
	const expect = "hide and box_dirs expectations /run/corral/cover.expect are missing or"
	cases := []struct{ name, mutate, want string }{
		{"every mount in place", "", ""},
		{"hidden dir uncovered", `umount "$P/my secrets"`, "hidden path /home/corral/my project/my secrets is not hidden"},
		{"hidden file uncovered", `umount "$P/token.txt"`, "hidden path /home/corral/my project/token.txt is not hidden"},
		{"cover made writable", `mount -o remount,bind,rw "$P/token.txt"`, "token.txt is covered writable"},
		{"a writable mount stacked on the cover", `mount --bind /tmp "$P/my secrets"`, "my secrets is covered writable"},
		{"absent path appeared", `touch "$P/later.env"`, "hidden path /home/corral/my project/later.env appeared after the box booted"},
		{"absent path appeared as a symlink", `ln -s /nowhere "$P/later.env"`, "later.env appeared after the box booted"},
		{"box_dirs unmounted", `umount "$P/node_modules"`, "box_dirs directory /home/corral/my project/node_modules is not mounted"},
		{"pinned parent unmounted", `umount "$P/con fig"`, "directory /home/corral/my project/con fig holding a hidden path is not pinned"},
		{"expectations missing", "rm /run/corral/cover.expect", expect},
		{"expectations the box user's", "chown corral /run/corral/cover.expect", expect},
	}
	g := newGuestRoot(t, opts)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := g.run("", prep+c.mutate+"\n"+sessionCheck()+"\necho \"GUARD=$?\"\n"+daemonQuery("runuser -u corral --")+
				"printf 'DEEP='; "+GuardCheckPath+"; true\n")
			if code != 0 {
				t.Fatalf("setup failed, exit %d\n%s\n%s", code, out, errOut)
			}
			checkReport(t, out, errOut, c.want)
			checkDaemon(t, out, errOut, c.want)
			// The deep check's report, read the way the daemon's is.
			checkDaemon(t, strings.Replace(out[strings.LastIndex(out, "DEEP="):], "DEEP=", "DAEMON=", 1), errOut, c.want)
		})
	}
}
