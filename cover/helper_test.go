package cover

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// laterCase is what the box user (nobody) makes, after the boot script ran, at a hidden path
// that was absent at boot; sh runs as nobody in the top level, $T names a root-owned file
// outside the project holding "TARGET", in a directory of its own, named later.env.
type laterCase struct {
	name, sh string
	read     string // what nobody then reads (a path relative to the top level)
	covered  bool   // the helper must cover it (true) or refuse it and mount nothing (false)
	pinned   string // a directory made later that the helper must pin (rename fails), or ""
}

var laterCases = []laterCase{
	{"file", `echo LATER >later.env`, "later.env", true, ""},
	{"directory", `mkdir laterdir && echo LATER >laterdir/a`, "laterdir/a", true, ""},
	{"file under a directory made later", `mkdir -p sub && echo LATER >sub/later.env`, "sub/later.env", true, "sub"},
	{"symlink to a root file", `ln -s "$T" later.env`, "later.env", false, ""},
	{"symlink to a directory", `ln -s "$(dirname "$T")" laterdir`, "laterdir/later.env", false, ""},
	{"FIFO", `mkfifo later.env`, "", false, ""},
	{"parent a symlink", `ln -s "$(dirname "$T")" sub`, "sub/later.env", false, ""},
}

// TestHelperCoversLaterPath: a hidden path absent at boot and made later by the box user is
// covered by the helper (what the guard daemon runs at the next session start), and then
// unreadable, and a directory made later above it is pinned (cannot be renamed away); without
// the helper the same read and rename work (the control). A symlink, a FIFO or a
// symlinked parent planted instead is refused, and nothing is mounted over what it points to.
func TestHelperCoversLaterPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs the boot script and the helper in a private mount namespace")
	}
	for _, c := range laterCases {
		t.Run(c.name, func(t *testing.T) {
			for _, withHelper := range []bool{false, true} {
				out := runLater(t, c, withHelper)
				read := strings.Contains(out, "READ-OK")
				switch {
				case !withHelper && c.read != "" && !read:
					t.Errorf("control: without the helper nobody cannot read %s: the fixture blocks it\n%s", c.read, out)
				case withHelper && c.covered && (read || !strings.Contains(out, "HELPER=0")):
					t.Errorf("with the helper: want %s covered (HELPER=0, unreadable)\n%s", c.read, out)
				case withHelper && !c.covered && strings.Contains(out, "HELPER=0"):
					t.Errorf("with the helper: a %s was covered, want it refused\n%s", c.name, out)
				case withHelper && !c.covered && !strings.Contains(out, "TARGET-INTACT"):
					t.Errorf("with the helper: the symlink's target was mounted over\n%s", out)
				case c.pinned != "" && strings.Contains(out, "RENAMED") == withHelper:
					t.Errorf("helper run %v: renamed %s=%v, want the rename to fail only once pinned\n%s", withHelper, c.pinned, strings.Contains(out, "RENAMED"), out)
				}
			}
		})
	}
}

// runLater runs the boot script as root in a private mount namespace over a fresh fixture,
// then c.sh as nobody, then (withHelper) the helper for each hidden path that now exists, then
// nobody's read of c.read, and returns the output.
func runLater(t *testing.T, c laterCase, withHelper bool) string {
	t.Helper()
	top := nsFixture(t)
	base := filepath.Dir(top)
	// The target is named like a hidden path so that a symlinked parent leads to a file.
	target := filepath.Join(base, "outside", "later.env")
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("TARGET"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(top, []string{"later.env", "laterdir/", "sub/later.env"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	script, err := plan.BootScript("nobody")
	if err != nil {
		t.Fatal(err)
	}
	sf := filepath.Join(base, "cover.sh")
	if err := os.WriteFile(sf, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("set -u\ncd \"$1\"\n" + nsRunCorral + "sh \"$2\" >/dev/null || { echo SCRIPT-FAILED; exit 1; }\n")
	b.WriteString("runuser -u nobody -- env T=\"$3\" sh -c " + shq(c.sh) + " || echo BOX-FAILED\n")
	if withHelper {
		b.WriteString("rc=0; for p in later.env laterdir sub/later.env; do if [ -e \"$p\" ] || [ -L \"$p\" ]; then perl " + HelperPath + " \"$1/$p\" || rc=$?; fi; done; echo \"HELPER=$rc\"\n")
	}
	if c.read != "" {
		b.WriteString("runuser -u nobody -- cat " + shq(c.read) + " && echo READ-OK\n")
	}
	if c.pinned != "" {
		b.WriteString("runuser -u nobody -- mv " + shq(c.pinned) + " " + shq(c.pinned+".away") + " && echo RENAMED\n")
	}
	b.WriteString("[ \"$(cat \"$3\")\" = TARGET ] && ! findmnt -rn --mountpoint \"$3\" >/dev/null && ! findmnt -rn --mountpoint \"$(dirname \"$3\")\" >/dev/null && echo TARGET-INTACT\n")
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", b.String(), "sh", top, sf, target).CombinedOutput()
	if err != nil {
		t.Fatalf("namespace run: %v\n%s", err, out)
	}
	return string(out)
}
