package cover

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The tests in this file run the rendered boot script as root inside a private mount namespace
// (unshare -m) over a fixture project, then probe it as an unprivileged user (nobody), which is
// what the box user is in broker and offline modes. Every probe runs twice: once after the
// script (it must fail, or for box_dirs, land off the host directory) and once in a namespace
// where the script did not run (the control: the same probe succeeds, so the fixture is not
// what blocks it).

// nsProbe is one thing the box user tries; sh runs as nobody in the project's top level.
type nsProbe struct {
	name    string
	sh      string
	blocked bool // with the script: fails (true) or still works (false, a control of its own)
}

var nsProbes = []nsProbe{
	{"read hidden file", `cat config/token.txt`, true},
	{"read file in hidden dir", `cat secrets/a.txt`, true},
	{"list hidden dir", `ls secrets`, true},
	{"write hidden file", `echo x >config/token.txt`, true},
	{"create in hidden dir", `echo x >secrets/new.txt`, true},
	{"read sibling file", `cat config/other.txt`, false},
	{"unmount in a user namespace", `unshare -Urm sh -c 'umount secrets 2>/dev/null; umount -l secrets 2>/dev/null; cat secrets/a.txt'`, true},
	{"bind the parent in a user namespace", `d=$(mktemp -d); unshare -Urm sh -ec 'mount --bind . "$1"; cat "$1/secrets/a.txt"' sh "$d"`, true},
	{"open by another path", `cat ./config//token.txt`, true},
	// config/shadowed.txt stands for a git shadow mount made before the script (read-only): the
	// pin of config must carry it along, not uncover the writable file beneath.
	{"write a read-only mount made before, inside a pinned dir", `echo x >>config/shadowed.txt`, true},
	// The renames come last: in the control run they succeed and move the fixture away.
	{"rename hidden dir away", `mv secrets secrets.away && cat secrets.away/a.txt`, true},
	// Renamed, the file would be at a path nobody hid at the next boot.
	{"rename the hidden file's parent away", `mv config config.away`, true},
}

// nsFixture makes a project tree every user can traverse, its files writable by all so that
// the controls are not refused by permissions.
func nsFixture(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "cover-ns-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	top := filepath.Join(base, "proj")
	for _, d := range []string{"secrets", "config", "node_modules"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{"secrets/a.txt": "SECRET-A", "config/token.txt": "TOKEN", "config/other.txt": "OTHER", "config/shadowed.txt": "S"} {
		if err := os.WriteFile(filepath.Join(top, p), []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{base, top, "secrets", "config", "node_modules", "secrets/a.txt", "config/token.txt", "config/other.txt", "config/shadowed.txt"} {
		if !filepath.IsAbs(d) {
			d = filepath.Join(top, d)
		}
		if err := os.Chmod(d, 0o777); err != nil { // files too: WriteFile's mode passes the umask
			t.Fatal(err)
		}
	}
	return top
}

// runInNamespace runs the boot script (when script is not "") as root in a new private mount
// namespace, then the box-user commands, and returns the combined output.
func runInNamespace(t *testing.T, top, script, user string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("set -u\ncd \"$1\"\n" + nsRunCorral)
	if script != "" {
		b.WriteString("mount --bind config/shadowed.txt config/shadowed.txt && mount --make-private config/shadowed.txt && mount -o remount,bind,ro config/shadowed.txt\n")
		b.WriteString("sh \"$2\" || { echo SCRIPT-FAILED; exit 1; }\nsh \"$2\" >/dev/null || { echo SECOND-RUN-FAILED; exit 1; }\n")
		b.WriteString("echo EXPECT; cat " + ExpectPath + "; echo END\n")
	}
	for i, p := range nsProbes {
		b.WriteString("runuser -u " + user + " -- sh -c " + shq(p.sh) + " >/dev/null 2>&1; echo \"PROBE " + itoa(i) + " $?\"\n")
	}
	b.WriteString("runuser -u " + user + " -- sh -ec 'mkdir -p node_modules/pkg && echo y >node_modules/pkg/index.js && cat node_modules/pkg/index.js' && echo BOXDIR-WRITE-OK\n")
	sf := filepath.Join(t.TempDir(), "cover.sh")
	if err := os.WriteFile(sf, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", b.String(), "sh", top, sf).CombinedOutput()
	if err != nil {
		t.Fatalf("namespace run: %v\n%s", err, out)
	}
	return string(out)
}

// nsRunCorral gives the namespace a /run/corral of its own, so that runs at the same time (other
// tests, other checkouts) do not replace each other's expectations file and helper.
const nsRunCorral = "mkdir -p /run/corral && mount -t tmpfs -o mode=0755 tmpfs /run/corral || exit 1\n"

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func itoa(i int) string { return strconv.Itoa(i) }

// probeResults maps each probe's index to whether it succeeded (exit 0).
func probeResults(t *testing.T, out string) map[string]bool {
	t.Helper()
	res := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "PROBE" {
			res[f[1]] = f[2] == "0"
		}
	}
	if len(res) != len(nsProbes) {
		t.Fatalf("got %d probe results, want %d:\n%s", len(res), len(nsProbes), out)
	}
	return res
}

func TestBootScriptInNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs the boot script in a private mount namespace (unshare -m)")
	}
	for _, tool := range []string{"unshare", "runuser", "findmnt", "realpath"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	const user = "nobody"
	// Control: no script. Every probe works, and a box_dirs write lands on the host directory.
	ctl := nsFixture(t)
	out := runInNamespace(t, ctl, "", user)
	for i, ok := range probeResults(t, out) {
		if !ok {
			t.Errorf("control: probe %s %q failed without the script: the fixture, not the hide, blocks it\n%s", i, nsProbes[atoi(i)].name, out)
		}
	}
	if _, err := os.Stat(filepath.Join(ctl, "node_modules/pkg/index.js")); err != nil {
		t.Errorf("control: the box user's write did not reach the host directory without the script: %v\n%s", err, out)
	}

	top := nsFixture(t)
	plan, err := Resolve(top, []string{"secrets/", "config/token.txt", "later.env"}, []string{"node_modules"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	script, err := plan.BootScript(user)
	if err != nil {
		t.Fatal(err)
	}
	out = runInNamespace(t, top, script, user)
	for i, ok := range probeResults(t, out) {
		p := nsProbes[atoi(i)]
		if ok == p.blocked {
			t.Errorf("probe %q: succeeded=%v, want blocked=%v\n%s", p.name, ok, p.blocked, out)
		}
	}
	if !strings.Contains(out, "BOXDIR-WRITE-OK") {
		t.Errorf("the box user cannot write its box_dirs directory:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(top, "node_modules/pkg")); err == nil {
		t.Errorf("a write to the box_dirs directory reached the host's node_modules")
	}
	for p, want := range map[string]string{"secrets/a.txt": "SECRET-A", "config/token.txt": "TOKEN"} {
		if b, err := os.ReadFile(filepath.Join(top, p)); err != nil || string(b) != want {
			t.Errorf("host file %s after the session: %q, %v; want %q untouched", p, b, err, want)
		}
	}
	wantExpect := "pin " + top + "/config\nhide " + top + "/config/token.txt\nabsent " + top + "/later.env\nhide " + top + "/secrets\nboxdir " + top + "/node_modules\n"
	if !strings.Contains(out, "EXPECT\n"+wantExpect+"END") {
		t.Errorf("expectations file: want\n%s\nin\n%s", wantExpect, out)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
