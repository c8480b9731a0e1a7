package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hideProbe is what the box user tries in one session: the sibling file first (the control:
// the mount itself is readable), then every hidden path, each printing LEAK-… only if the read
// worked, then a write through the box_dirs directory, read back.
const hideProbe = `cat config/other.txt; echo
cat config/token.txt && echo LEAK-TOKEN
cat secrets/key.txt && echo LEAK-KEY
ls -A secrets && echo LEAK-LS
cat later.env && echo LEAK-LATER
echo overwrite >config/token.txt && echo LEAK-WRITE
mkdir -p node_modules/pkg && { [ -f node_modules/pkg/index.js ] || echo box-side >node_modules/pkg/index.js; }
cat node_modules/pkg/index.js
true`

// TestKeysHide is the hide and box_dirs group on one broker-mode box (no sudo for the box
// user, so the covers are a boundary): hidden paths are unreadable in the box while a sibling
// is readable, still after a stop and a new run; a path hidden but missing at boot that
// appears meanwhile is hidden by the guard daemon at the next session start, which then runs
// (the in-band check, which cannot mount, refuses it instead), and stays hidden after a
// restart; a box_dirs directory written in the box stays off the host and keeps its contents
// across the restart.
func TestKeysHide(t *testing.T) {
	group(t)
	dir := newProject(t, "keys-hide")
	box := boxName(t, dir)
	cleanupBox(t, box)
	writeFile(t, filepath.Join(dir, ".corral.toml"),
		"network = \"broker\"\nhide = [\"secrets/\", \"config/token.txt\", \"later.env\", \"later-inband.env\"]\nbox_dirs = [\"node_modules\"]\n", 0o644)
	writeFile(t, filepath.Join(dir, "secrets/key.txt"), "SECRET-KEY-VALUE\n", 0o600)
	writeFile(t, filepath.Join(dir, "config/token.txt"), "TOKEN-VALUE\n", 0o600)
	writeFile(t, filepath.Join(dir, "config/other.txt"), "OTHER-VALUE\n", 0o644)
	gitAsUser(t, dir, "add", ".corral.toml", "config/other.txt")
	gitAsUser(t, dir, "commit", "-qm", "base")

	// hidden runs the probe and checks what a session with every cover in place shows.
	hidden := func(t *testing.T, args ...string) {
		t.Helper()
		r := corral(t, dir, nil, append(args, "--", "sh", "-c", hideProbe)...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "OTHER-VALUE") {
			t.Fatalf("control: the sibling config/other.txt is not readable in the box (stdout %q): the probe proves nothing", r.stdout)
		}
		for _, leak := range []string{"TOKEN-VALUE", "SECRET-KEY-VALUE", "key.txt", "LEAK-"} {
			if strings.Contains(r.stdout, leak) {
				t.Errorf("the box reached a hidden path: %q in stdout %q", leak, r.stdout)
			}
		}
		if !strings.Contains(r.stdout, "box-side") {
			t.Errorf("the box_dirs directory does not hold what the box wrote there (stdout %q)", r.stdout)
		}
		for p, want := range map[string]string{"secrets/key.txt": "SECRET-KEY-VALUE\n", "config/token.txt": "TOKEN-VALUE\n"} {
			if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != want {
				t.Errorf("host %s is %q, %v: want it untouched", p, b, err)
			}
		}
		if fi, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil || !fi.IsDir() {
			t.Errorf("host node_modules: %v; want the empty mount point git corral made", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules/pkg")); err == nil {
			t.Errorf("node_modules/pkg written in the box is on the host")
		}
	}
	t.Run("hidden file and directory unreadable, sibling readable, box_dirs off the host", func(t *testing.T) {
		hidden(t, "run", "--yes")
	})
	t.Run("a hidden path that appears is hidden at the next session start", func(t *testing.T) {
		// Control: the session before the path appears runs.
		if r := corral(t, dir, nil, "run", "--", "true"); r.code != 0 {
			t.Fatalf("control: exit %d before later.env appeared: %s", r.code, r.stderr)
		}
		// The in-band check runs as the box user and cannot mount: it refuses the path.
		writeFile(t, filepath.Join(dir, "later-inband.env"), "LATER-INBAND-VALUE\n", 0o644)
		r := corral(t, dir, []string{"CORRAL_GUARD_CHECK=inband"}, "run", "--", "sh", "-c", "cat later-inband.env; echo RAN")
		if r.code == 0 || strings.Contains(r.stdout, "RAN") || strings.Contains(r.stdout, "LATER-INBAND-VALUE") {
			t.Fatalf("in-band check: exit %d, stdout %q: a session started while later-inband.env was unhidden", r.code, r.stdout)
		}
		if !strings.Contains(r.stderr, "later-inband.env appeared after the box booted") {
			t.Errorf("in-band check: stderr %q does not say which path appeared", r.stderr)
		}
		// The guard daemon (the default) hides both before it reports, and the session runs.
		writeFile(t, filepath.Join(dir, "later.env"), "LATER-VALUE\n", 0o644)
		r = corral(t, dir, nil, "run", "--", "sh", "-c", "cat later.env && echo LEAK-LATER; cat later-inband.env && echo LEAK-INBAND; cat config/other.txt; echo RAN")
		if r.code != 0 || !strings.Contains(r.stdout, "RAN") {
			t.Fatalf("exit %d, stdout %q, stderr %q: want the session to run with later.env hidden", r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, "LATER-") || strings.Contains(r.stdout, "LEAK-") || !strings.Contains(r.stdout, "OTHER-VALUE") {
			t.Fatalf("stdout %q: want later.env and later-inband.env hidden, the sibling readable", r.stdout)
		}
		// Hidden now, the in-band check lets the next session through.
		if r := corral(t, dir, []string{"CORRAL_GUARD_CHECK=inband"}, "run", "--", "true"); r.code != 0 {
			t.Errorf("in-band check after the daemon hid the paths: exit %d: %s", r.code, r.stderr)
		}
		for p, want := range map[string]string{"later.env": "LATER-VALUE\n", "later-inband.env": "LATER-INBAND-VALUE\n"} {
			if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != want {
				t.Errorf("host %s is %q, %v: want it untouched", p, b, err)
			}
		}
	})
	// One restart for both: the paths hidden from the start, and the one that appeared later,
	// are hidden again after a stop and a new run.
	t.Run("still hidden after stop and a new run, the path that appeared too", func(t *testing.T) {
		if r := corral(t, dir, nil, "stop"); r.code != 0 {
			t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
		}
		hidden(t, "run")
		r := corral(t, dir, nil, "run", "--", "sh", "-c", "cat later.env && echo LEAK-LATER; cat config/other.txt")
		if r.code != 0 || strings.Contains(r.stdout, "LATER-VALUE") || strings.Contains(r.stdout, "LEAK-") || !strings.Contains(r.stdout, "OTHER-VALUE") {
			t.Fatalf("exit %d, stdout %q: want later.env hidden after the restart, the sibling readable", r.code, r.stdout)
		}
	})
}
