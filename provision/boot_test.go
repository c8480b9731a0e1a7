package provision

import (
	"os"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

// bootAll runs every rendered script in name order, as Lima's boot.sh does at every boot.
const bootAll = `for s in /corral/[0-9]*.sh; do sh "$s" >/tmp/boot.log 2>&1 || { echo "BOOT FAILED: $s"; cat /tmp/boot.log; exit 95; }; done
`

// TestBootOffline runs a whole offline bundle twice (two boots) on a hostile starting state,
// then calls the guard check exactly as vm does (GuardCheckArgv, as the box user) and checks
// that the repository's scripts ran as the box user, from the approved bytes, after the drop.
func TestBootOffline(t *testing.T) {
	needRoot(t)
	ns := testNetns(t, "cpvboot")
	opts := privdropOptions()
	opts.Repo = []RepoScript{
		{Path: "scripts/who.sh", Body: []byte("#!/bin/sh\n{ id -un; pwd; sudo -n true 2>/dev/null && echo ROOT || echo NOROOT; } >/tmp/who.out\n")},
		{Path: "scripts/mark.sh", Body: []byte("#!/bin/sh\n# corral: system\nid -un >/tmp/mark.out\n")},
	}
	g := newGuestRoot(t, opts)
	guard := strings.Join(GuardCheckArgv(), " ")
	out, errOut, code := g.run(ns, prepHostile+`
install -d -o corral -g corral /home/corral/project
echo 'echo NOT THE APPROVED BYTES >/tmp/who.out' >/home/corral/project/who.sh
`+bootAll+bootAll+`
echo "WHO=$(tr '\n' ' ' </tmp/who.out)"
echo "MARK=$(cat /tmp/mark.out)"
echo "GUARD=$(runuser -u corral -- `+guard+`)"
`)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"WHO=corral /etc/corral/provision/01-who-sh.d NOROOT ",
		"MARK=corral",
		`GUARD={"ok":true,"mode":"offline","failures":[]}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s\n%s", want, out, errOut)
		}
	}
}

// TestBootFullUndoesLockdown: a box turned back to full mode loses the lockdown and the deny
// rule, so the mode on disk always matches the mode rendered.
func TestBootFullUndoesLockdown(t *testing.T) {
	needRoot(t)
	ns := testNetns(t, "cpvfull")
	off := newGuestRoot(t, privdropOptions())
	fullOpts := privdropOptions()
	fullOpts.Network = policy.NetworkFull
	full, err := Render(fullOpts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range full.Scripts {
		if err := os.WriteFile(off.dir+"/full-"+s.Name, []byte(s.Body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := off.run(ns, prepHostile+bootAll+`
for s in /corral/full-*.sh; do sh "$s" >/dev/null || exit 96; done
echo "TABLES=$(nft list tables | tr '\n' ' ')"
echo "SUDOERS=$(ls /etc/sudoers.d | tr '\n' ' ')"
ls /etc/systemd/system/sysinit.target.wants/corral-lockdown.service 2>/dev/null && echo UNIT_LEFT
echo "GUARD=$(/usr/local/libexec/corral/guard-check)"
`)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"TABLES=\n", "SUDOERS=README ", `GUARD={"ok":true,"mode":"full","failures":[]}`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "UNIT_LEFT") {
		t.Errorf("lockdown unit still enabled in full mode\n%s", out)
	}
}

// TestRepoScriptRefusesWithoutGuards: Lima runs the next provision script even when an earlier
// one failed, so a repository script must refuse to run when the lockdown is not in place.
func TestRepoScriptRefusesWithoutGuards(t *testing.T) {
	needRoot(t)
	ns := testNetns(t, "cpvnog")
	opts := privdropOptions()
	opts.Repo = []RepoScript{{Path: "scripts/who.sh", Body: []byte("#!/bin/sh\necho RAN >/tmp/ran.out\n")}}
	g := newGuestRoot(t, opts)
	// 20-lockdown "failed": the ruleset was never loaded.
	out, errOut, code := g.run(ns, prepHostile+`
install -d -o corral -g corral /home/corral/project
sh /corral/05-box.sh >/dev/null && sh /corral/10-base.sh >/dev/null && sh /corral/30-privdrop.sh >/dev/null || exit 90
sh /corral/50-repo-01-who-sh.sh
echo "REPO=$?"
if [ -e /tmp/ran.out ]; then echo SCRIPT_RAN; fi
`)
	if code != 0 || !strings.Contains(out, "REPO=1") || strings.Contains(out, "SCRIPT_RAN") || !strings.Contains(errOut, "guards do not hold") {
		t.Fatalf("exit %d: want the repository script refused\n%s\n%s", code, out, errOut)
	}
}
