package gitshadow

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The tests in this file hold the guest script to its cost and to its refusals, in a private
// mount namespace as root (as namespace_test.go's do).

// spawnsInNamespace runs the guest script twice in a fresh mount and PID namespace over the
// fixture (shared, as a Lima mount is) and returns how many processes each run started, the
// script's own shell included. PIDs in a new PID namespace are handed out one after another, so
// a process started after each run reads the count off its own PID; the same wrapper with an
// empty script is the baseline.
func spawnsInNamespace(t *testing.T, root, script string) (first, again int) {
	t.Helper()
	pids := func(script string) (int, int) {
		inner := `set -e; mount -t tmpfs tmpfs /var/lib; ` + sharedRoot + `
sh "$1" >/dev/null; sh -c 'echo $$'; sh "$1" >/dev/null; sh -c 'echo $$'`
		cmd := exec.Command("unshare", "-m", "-p", "-f", "--propagation", "private", "--", "sh", "-c", inner, "_", script)
		cmd.Env = append(os.Environ(), "R="+root)
		out, err := cmd.CombinedOutput()
		f := strings.Fields(string(out))
		if err != nil || len(f) != 2 {
			t.Fatalf("guest script in a PID namespace: %v\n%s", err, out)
		}
		a, _ := strconv.Atoi(f[0])
		b, _ := strconv.Atoi(f[1])
		return a, b
	}
	a0, b0 := pids("/dev/null")
	a, b := pids(script)
	return a - a0 + 1, (b - a) - (b0 - a0) + 1
}

// TestGuestScriptSpawnBudget holds the guest script for the fixture to a budget of processes:
// it runs as root at every boot and golden-state resume, and under software emulation every
// process a guest starts costs tens of milliseconds. The first run may start about two per
// shadow (a mount, a read-only remount or a copy); a second run in the same boot (everything
// already mounted) starts no process per shadow at all. The script before this budget started
// 168 processes for the fixture, 6 per shadow, and 60 on a re-run.
func TestGuestScriptSpawnBudget(t *testing.T) {
	e := setupNamespace(t)
	n := len(discover(t, e.work).Expectations())
	first, again := spawnsInNamespace(t, e.root, e.script)
	t.Logf("%d shadows: %d processes on the first run, %d on a re-run", n, first, again)
	if budget := 2*n + 4; first > budget {
		t.Errorf("the guest script started %d processes for %d shadows, budget %d", first, n, budget)
	}
	if again > 3 {
		t.Errorf("a re-run of the guest script started %d processes with every shadow in place, budget 3", again)
	}
	if first < n { // the control: the count sees the script's mounts at all
		t.Errorf("only %d processes counted for %d mounts: the count is broken", first, n)
	}
}

// refusalTree builds, as root in dir, a real directory with a file, a sub directory and an
// empty directory, a symlink to the directory, a symlink to the file, and a directory whose
// name holds a space, a tab and a backslash (which /proc/self/mountinfo escapes).
func refusalTree(t *testing.T) (real, odd string) {
	t.Helper()
	dir := t.TempDir()
	real = filepath.Join(dir, "real")
	odd = filepath.Join(dir, "odd dir\twith\\slash")
	for _, d := range []string{real + "/sub", real + "/d", odd + "/d", odd + "/sub"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{real + "/f", real + "/sub/g", odd + "/f"} {
		os.WriteFile(f, []byte("x\n"), 0o644)
	}
	os.Symlink("real", filepath.Join(dir, "link"))
	os.Symlink("real/f", filepath.Join(dir, "flink"))
	return real, odd
}

// mountinfoEscape is p as /proc/self/mountinfo writes a mount point.
func mountinfoEscape(p string) string {
	return strings.NewReplacer(`\`, `\134`, " ", `\040`, "\t", `\011`, "\n", `\012`).Replace(p)
}

// applyShadows renders the guest script for shadows and runs it runs times in a fresh mount
// namespace. It returns the script's messages, the mounts (mount point as mountinfo escapes
// it, a space, the per-mount options) at or below under, the number of mounts in the namespace,
// and the last run's error.
func applyShadows(t *testing.T, under string, runs int, shadows ...Shadow) (msgs string, below []string, total int, err error) {
	t.Helper()
	script, err := (&Plan{Extra: shadows}).GuestScript()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "guest.sh")
	os.WriteFile(f, []byte(script), 0o644)
	inner := `set -e; mount -t tmpfs tmpfs /var/lib; i=0; rc=0
while [ "$i" -lt "$2" ]; do rc=0; sh "$1" >/dev/null || rc=$?; i=$((i + 1)); done
awk '{print "M", $5, $6}' /proc/self/mountinfo; exit "$rc"`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "--", "sh", "-c", inner, "_", f, strconv.Itoa(runs))
	out, err := cmd.CombinedOutput()
	esc := mountinfoEscape(under)
	var m strings.Builder
	for _, l := range strings.Split(string(out), "\n") {
		mp, ok := strings.CutPrefix(l, "M ")
		switch {
		case !ok:
			m.WriteString(l + "\n")
		case strings.HasPrefix(mp, esc+" ") || strings.HasPrefix(mp, esc+"/"):
			below = append(below, mp)
			total++
		default:
			total++
		}
	}
	return m.String(), below, total, err
}

// TestGuestScriptRefusals: the guest script refuses a path that is missing, is a symlink, is
// reached through a symlinked directory, or is not the type its shadow needs, and mounts
// nothing there; the same shadows on the real paths (the controls) are mounted read-only.
func TestGuestScriptRefusals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: applies the guest shadow in a mount namespace (unshare -m)")
	}
	real, _ := refusalTree(t)
	dir := filepath.Dir(real)
	for _, c := range []struct {
		name string
		s    Shadow
		want string
	}{
		{"missing", Shadow{Path: real + "/nope", Kind: ReadOnly}, "/nope: missing"},
		{"missing parent", Shadow{Path: real + "/nope/f", Kind: ReadOnly}, "/nope/f: missing"},
		{"a symlink", Shadow{Path: dir + "/flink", Kind: ReadOnly}, "/flink: reached through a symlink"},
		{"through a symlinked dir", Shadow{Path: dir + "/link/f", Kind: ReadOnly}, "/link/f: reached through a symlink (" + real + "/f)"},
		{"through a symlinked dir, deeper", Shadow{Path: dir + "/link/sub/g", Kind: Copy}, "/link/sub/g: reached through a symlink (" + real + "/sub/g)"},
		{"a symlinked dir pinned", Shadow{Path: dir + "/link", Kind: Pin}, "/link: reached through a symlink"},
		{"not canonical", Shadow{Path: real + "/sub/../f", Kind: ReadOnly}, "reached through a symlink"},
		{"trailing slash", Shadow{Path: real + "/sub/", Kind: Pin}, "/sub/: "},
		{"a file pinned", Shadow{Path: real + "/f", Kind: Pin}, "/f: not a directory"},
		{"a dir copied", Shadow{Path: real + "/sub", Kind: Copy}, "/sub: not a regular file"},
		{"a file emptied", Shadow{Path: real + "/f", Kind: Empty}, "/f: not a directory"},
	} {
		msgs, below, _, err := applyShadows(t, dir, 1, c.s)
		if err == nil || !strings.Contains(msgs, "gitshadow: ") || !strings.Contains(msgs, c.want) {
			t.Errorf("%s: %s was not refused with %q (%v):\n%s", c.name, c.s.Path, c.want, err, msgs)
		}
		if len(below) > 0 {
			t.Errorf("%s: refused, yet mounted %q", c.name, below)
		}
	}
	msgs, below, _, err := applyShadows(t, dir, 1, Shadow{Path: real, Kind: Pin}, Shadow{Path: real + "/f", Kind: ReadOnly},
		Shadow{Path: real + "/sub/g", Kind: Copy}, Shadow{Path: real + "/d", Kind: Empty})
	if err != nil {
		t.Fatalf("control: the shadows on the real paths failed: %v\n%s", err, msgs)
	}
	got := strings.Join(below, "\n") + "\n"
	for _, p := range []string{real + " rw,", real + "/f ro,", real + "/sub/g ro,", real + "/d ro,"} {
		if !strings.Contains(got, p) {
			t.Errorf("control: no mount %q in\n%s", p, got)
		}
	}
}

// TestGuestScriptIdempotentOddNames runs the guest script three times over paths whose names
// hold a space, a tab and a backslash, which /proc/self/mountinfo writes as octal escapes: the
// script's own lookup of the mount table must see its earlier mounts there, so the re-runs add
// no mount (a lookup that missed them would stack a second mount on every path).
func TestGuestScriptIdempotentOddNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: applies the guest shadow in a mount namespace (unshare -m)")
	}
	_, odd := refusalTree(t)
	shadows := []Shadow{{Path: odd, Kind: Pin}, {Path: odd + "/f", Kind: Copy}, {Path: odd + "/d", Kind: Empty},
		{Path: odd + "/sub", Kind: ReadOnly}}
	msgs, below, once, err := applyShadows(t, odd, 1, shadows...)
	if err != nil || len(below) != len(shadows) {
		t.Fatalf("one run over %q: %v, mounts %q\n%s", odd, err, below, msgs)
	}
	msgs, below3, thrice, err := applyShadows(t, odd, 3, shadows...)
	if err != nil || thrice != once || len(below3) != len(shadows) {
		t.Errorf("three runs over %q: %v; %d mounts after three runs, %d after one: a re-run stacked mounts %q\n%s",
			odd, err, thrice, once, below3, msgs)
	}
}

// TestGuardChecksWithoutProcesses runs the guard check, as the unprivileged user, over paths
// whose names /proc/self/mountinfo escapes (space, tab, backslash): with the shadow applied it
// passes (the control) and starts no process of its own (it runs before every session); with a
// writable mount stacked on a read-only shadow, or a shadow unmounted, or no shadow at all, it
// fails naming each path.
func TestGuardChecksWithoutProcesses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: applies the guest shadow in a mount namespace (unshare -m)")
	}
	_, odd := refusalTree(t)
	os.Chmod(filepath.Dir(odd), 0o755)
	plan := &Plan{Extra: []Shadow{{Path: odd, Kind: Pin}, {Path: odd + "/f", Kind: Copy}, {Path: odd + "/d", Kind: Empty},
		{Path: odd + "/sub", Kind: ReadOnly}}}
	script, err := plan.GuestScript()
	if err != nil {
		t.Fatal(err)
	}
	guard, err := plan.GuardChecks()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "guest.sh"), []byte(script), 0o644)
	for _, c := range []struct{ name, prep, want string }{
		{"every shadow in place", `sh "$D/guest.sh" >/dev/null`, "gitshadow: ok 4\n"},
		{"no shadow", ``, "gitshadow: FAIL pin " + odd + ": not mounted\ngitshadow: FAIL empty " + odd + "/d: not mounted\n" +
			"gitshadow: FAIL copy " + odd + "/f: not mounted\ngitshadow: FAIL readonly " + odd + "/sub: not mounted\n"},
		{"a writable mount stacked", `sh "$D/guest.sh" >/dev/null; mount --bind /tmp "$O/d"`,
			"gitshadow: FAIL empty " + odd + "/d: writable (rw,"},
		{"a shadow made writable", `sh "$D/guest.sh" >/dev/null; mount -o remount,bind,rw "$O/sub"`,
			"gitshadow: FAIL readonly " + odd + "/sub: writable (rw,"},
		{"a shadow unmounted", `sh "$D/guest.sh" >/dev/null; umount "$O/f"`, "gitshadow: FAIL copy " + odd + "/f: not mounted\n"},
	} {
		inner := `set -e; mount -t tmpfs tmpfs /var/lib; ` + c.prep + `
sh -c 'echo $$' >"$D/before"; setpriv --reuid=` + attackUID + ` --regid=` + attackUID + ` --clear-groups -- sh -c "$G" && echo PASS
echo "spawned $(($(sh -c 'echo $$') - $(cat "$D/before") - 2))"`
		cmd := exec.Command("unshare", "-m", "-p", "-f", "--propagation", "private", "--", "sh", "-c", inner)
		cmd.Env = append(os.Environ(), "D="+dir, "O="+odd, "G="+guard)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		s := string(out)
		if !strings.Contains(s, c.want) || strings.Contains(s, "PASS") != (c.name == "every shadow in place") {
			t.Errorf("%s: guard check said\n%s\nwant %q", c.name, s, c.want)
		}
		// The guard's own process (setpriv execs sh) and the $(cat) are not counted.
		if !strings.Contains(s, "spawned 0\n") {
			t.Errorf("%s: the guard check started processes of its own:\n%s", c.name, s)
		}
	}
}

// TestGuestScriptReadOnlyKeepsMountFlags: a read-only shadow of a path on a nosuid, nodev,
// noexec mount (the project's mount after the privilege drop) keeps those flags, as the bind's
// own remount to ro would drop them if it were done in the bind's command (util-linux 2.38
// remounts with ro alone); the guest-local copies carry them all. The control is the same
// shadow over a mount without them: read-only, nothing added.
func TestGuestScriptReadOnlyKeepsMountFlags(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: applies the guest shadow in a mount namespace (unshare -m)")
	}
	real, _ := refusalTree(t)
	script, err := (&Plan{Extra: []Shadow{{Path: real + "/sub", Kind: ReadOnly}, {Path: real + "/f", Kind: Copy},
		{Path: real + "/d", Kind: Empty}}}).GuestScript()
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range []string{"nosuid,nodev,noexec", ""} {
		prep := ""
		if flags != "" {
			prep = `mount -o remount,bind,` + flags + ` "$P";`
		}
		inner := `set -e; mount -t tmpfs tmpfs /var/lib; mount --bind "$P" "$P"; ` + prep + ` sh -c "$S" >/dev/null
findmnt -rn -o VFS-OPTIONS --mountpoint "$P/sub"; findmnt -rn -o VFS-OPTIONS --mountpoint "$P/f"; findmnt -rn -o VFS-OPTIONS --mountpoint "$P/d"`
		cmd := exec.Command("unshare", "-m", "--propagation", "private", "--", "sh", "-c", inner)
		cmd.Env = append(os.Environ(), "P="+real, "S="+script)
		out, err := cmd.CombinedOutput()
		opts := strings.Fields(string(out))
		if err != nil || len(opts) != 3 {
			t.Fatalf("flags %q: %v\n%s", flags, err, out)
		}
		want := map[string]bool{"ro": true, "nosuid": flags != "", "nodev": flags != "", "noexec": flags != ""}
		for flag, on := range want {
			if strings.Contains(","+opts[0]+",", ","+flag+",") != on {
				t.Errorf("source mount %q: the read-only shadow's options %s, want %s %v", flags, opts[0], flag, on)
			}
		}
		for i, p := range []string{"copy", "empty"} {
			if o := "," + opts[i+1] + ","; !strings.Contains(o, ",ro,") || !strings.Contains(o, ",nosuid,nodev,noexec,") {
				t.Errorf("source mount %q: the %s shadow's options %s, want ro,nosuid,nodev,noexec", flags, p, opts[i+1])
			}
		}
	}
}
