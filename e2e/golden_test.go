package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goldenEntry is one base of git corral golden list --json.
type goldenEntry struct {
	Key    string `json:"key"`
	Dir    string `json:"dir"`
	SHA256 string `json:"sha256"`
	// StateSHA256 is set when the base has the build box's saved running state.
	StateSHA256 string   `json:"stateSha256"`
	Users       []string `json:"users"`
}

func goldens(t *testing.T, dir string) []goldenEntry {
	t.Helper()
	r := corral(t, dir, nil, "golden", "list", "--json")
	var doc struct {
		Goldens []goldenEntry `json:"goldens"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil {
		t.Fatalf("golden list --json: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	return doc.Goldens
}

// baseUsedBy returns the base whose users include box.
func baseUsedBy(gs []goldenEntry, box string) (goldenEntry, bool) {
	for _, g := range gs {
		if slices.Contains(g.Users, box) {
			return g, true
		}
	}
	return goldenEntry{}, false
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestGoldenSnapshotUndo is the golden group, in broker mode (every guard: lockdown, privilege
// drop, git shadow, mounts), three boots in all: the first box of a recipe builds the golden base
// (boot 1) and starts as an overlay of it (boot 2), and its session runs, so the derived box
// passed the guest guard check of its mode with the project mounted at its path; a snapshot of the stopped box, a change in the box (boot 3), undo, and the change is gone
// from the disk the box boots from (the mounted project's change stays, as every snapshot output
// says); the golden base's hash and mtime never change while the box writes.
func TestGoldenSnapshotUndo(t *testing.T) {
	group(t)
	dir := newProject(t, "golden")
	box := boxName(t, dir)
	cleanupBox(t, box)
	// golden is on by default (a repository may also say so: project-ok); this one also tightens the network.
	writeFile(t, filepath.Join(dir, ".corral.toml"), "golden = true\nnetwork = \"broker\"\n", 0o644)

	// The session runs only when the guard check passes (it failed here before the golden build
	// box stopped baking its project mount into the base: /run/corral/shadow.expect was missing).
	// The box resumes the build box's saved state (golden_state.go): what a boot would have made
	// different must be this box's own: hostname, clock, machine id, the project at its path
	// (nosuid, as the privilege drop makes it), the git shadow (the session's guard check).
	probe := "cat README && findmnt -n -o TARGET --target " + dir + " && cat /etc/corral/mode && hostname && date +%s && cat /etc/machine-id" +
		" && findmnt -n -o OPTIONS --target " + dir + " && ls /sys/bus/acpi/drivers/vmgenid | grep -c QEMUVGID"
	r := corral(t, dir, nil, "run", "--yes", "--", "sh", "-c", probe)
	if r.code != 0 {
		t.Fatalf("first run on a box from the golden base: exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 8 || lines[0] != "hello" || lines[1] != dir || lines[2] != "broker" {
		t.Fatalf("first run printed %q, want the project's README, its mount at %s and mode broker", r.stdout, dir)
	}
	if lines[3] != "lima-"+box {
		t.Errorf("hostname %q, want lima-%s (not the build box's)", lines[3], box)
	}
	if sec, err := strconv.ParseInt(lines[4], 10, 64); err != nil || time.Since(time.Unix(sec, 0)).Abs() > 2*time.Minute {
		t.Errorf("box clock %q is off the host's %d (the saved state's clock was not set again)", lines[4], time.Now().Unix())
	}
	if len(lines[5]) != 32 {
		t.Errorf("machine id %q: want a fresh 32-digit id", lines[5])
	}
	if !strings.Contains(","+lines[6]+",", ",nosuid,") {
		t.Errorf("project mount options %q lack nosuid", lines[6])
	}
	if lines[7] != "1" {
		t.Errorf("VM generation ID device bound to the guest's driver: %q, want 1 (RNG reseed at resume)", lines[7])
	}
	// It resumed (the progress names the phase) and did not fall back to a boot.
	resumed := strings.Index(r.stderr, "resume golden state")
	if resumed < 0 || strings.Contains(r.stderr[resumed:], "corral: boot") {
		t.Fatalf("the box did not resume the golden state:\n%s", r.stderr)
	}
	// Other groups' boxes may have left bases of their own modes (golden is on by default).
	g, ok := baseUsedBy(goldens(t, dir), box)
	if !ok {
		t.Fatalf("golden list names no base used by %s", box)
	}
	if g.StateSHA256 == "" {
		t.Fatalf("golden base %s has no saved state", g.Key)
	}
	state := filepath.Join(g.Dir, "golden.state")
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("golden state %s: %v, want mode 0444", state, err)
	}
	disk := filepath.Join(g.Dir, "golden.qcow2")
	fi, err := os.Stat(disk)
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("golden disk %s: %v, want mode 0444", disk, err)
	}
	mtime := fi.ModTime()
	if sum := sha256File(t, disk); sum != g.SHA256 {
		t.Fatalf("golden disk sha256 %s after the first box booted, recorded %s", sum, g.SHA256)
	}
	// The box's disk is an overlay of the base, not a copy of the image.
	inst := filepath.Join(suite.home, "lima", box)
	if fi, err := os.Stat(filepath.Join(inst, "diffdisk")); err != nil || fi.Size() > 200<<20 {
		t.Fatalf("box diffdisk: %v: want a small overlay", err)
	}

	t.Run("snapshot of a running box is refused with the fix", func(t *testing.T) {
		r := corral(t, dir, nil, "snapshot", "create", "before")
		if r.code != 1 || !strings.Contains(r.stderr, "stopped") || !strings.Contains(r.stderr, "--stop") {
			t.Fatalf("exit %d, stderr %q: want exit 1 naming a stopped box and --stop", r.code, r.stderr)
		}
	})

	t.Run("snapshot, change the box, undo: the change is gone", func(t *testing.T) {
		r := corral(t, dir, nil, "snapshot", "create", "--stop", "before")
		if r.code != 0 || !strings.Contains(r.stderr, "NOT in the snapshot") {
			t.Fatalf("snapshot create: exit %d, stderr %q: want 0 and the mount note", r.code, r.stderr)
		}
		marker := "corral-undo-" + randomHex(t)
		// The box user has no root in broker mode; its home is on the box's disk.
		change := "printf %s " + marker + " > ~/undo-marker && echo kept > " + dir + "/in-project && sync && cat ~/undo-marker"
		if r := corral(t, dir, nil, "run", "--", "sh", "-c", change); r.code != 0 || strings.TrimSpace(r.stdout) != marker {
			t.Fatalf("change: exit %d, stdout %q: %s", r.code, r.stdout, r.stderr)
		}
		if r := corral(t, dir, nil, "stop"); r.code != 0 {
			t.Fatalf("stop: %s", r.stderr)
		}
		// The disk the box boots from, read offline: the change is there before undo (so the
		// search can find it) and gone after; booting again to look would cost a boot.
		if !diskHolds(t, filepath.Join(inst, "diffdisk"), marker) {
			t.Fatal("the change is not on the box's disk before undo: the check below would prove nothing")
		}
		r = corral(t, dir, nil, "undo", "--json")
		var doc struct {
			Snapshot, Note string
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || doc.Snapshot != "before" || !strings.Contains(doc.Note, "NOT in the snapshot") {
			t.Fatalf("undo: exit %d, stdout %q: want snapshot before and the mount note", r.code, r.stdout)
		}
		if diskHolds(t, filepath.Join(inst, "diffdisk"), marker) {
			t.Fatal("after undo the box's disk still holds the change")
		}
		if b, err := os.ReadFile(filepath.Join(dir, "in-project")); err != nil || string(b) != "kept\n" {
			t.Fatalf("the project's file after undo: %q, %v: want it kept (the mount is not in the snapshot)", b, err)
		}
	})

	t.Run("the golden base was never written", func(t *testing.T) {
		if fi, err := os.Stat(disk); err != nil || !fi.ModTime().Equal(mtime) {
			t.Fatalf("golden disk mtime %v, was %v (%v)", fi.ModTime(), mtime, err)
		}
		if sum := sha256File(t, disk); sum != g.SHA256 {
			t.Fatalf("golden disk sha256 %s, recorded %s", sum, g.SHA256)
		}
		if sum := sha256File(t, state); sum != g.StateSHA256 {
			t.Fatalf("golden state sha256 %s, recorded %s", sum, g.StateSHA256)
		}
		if r := corral(t, dir, nil, "golden", "verify"); r.code != 0 || !strings.Contains(r.stdout, "unchanged") {
			t.Fatalf("golden verify: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})

	// A base serves every project of its recipe and mode: a second project's first box resumes
	// the same base (05-box, which writes the project's mount point for the product's scripts,
	// runs again in it) and passes every guard with its own project mounted at its own path.
	t.Run("another project resumes the same base", func(t *testing.T) {
		dir2 := newProject(t, "golden-other")
		box2 := boxName(t, dir2)
		cleanupBox(t, box2)
		writeFile(t, filepath.Join(dir2, ".corral.toml"), "golden = true\nnetwork = \"broker\"\n", 0o644)
		r := corral(t, dir2, nil, "run", "--yes", "--", "sh", "-c", "cat README && findmnt -n -o TARGET --target "+dir2+" && hostname && sudo -n /usr/local/libexec/corral/guard-check && grep -cxF '"+dir2+"' /etc/corral/project-dir")
		if r.code != 0 {
			t.Fatalf("second project: exit %d: %s", r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "building golden base") || !strings.Contains(r.stderr, "resume golden state") {
			t.Fatalf("the second project's box did not resume the existing base:\n%s", r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		// The last line proves 05-box ran again for this project: the base's memory came with
		// the first project's mount point, which the guard check and the privilege drop read.
		if len(lines) != 5 || lines[0] != "hello" || lines[1] != dir2 || lines[2] != "lima-"+box2 || !strings.Contains(lines[3], `"ok":true`) || lines[4] != "1" {
			t.Fatalf("second project's box printed %q: want its README, its mount at %s, its hostname, a passing deep guard check and its project in /etc/corral/project-dir", r.stdout, dir2)
		}
		if g2, ok := baseUsedBy(goldens(t, dir2), box2); !ok || g2.Key != g.Key || !slices.Contains(g2.Users, box) {
			t.Fatalf("golden list: the second box's base is %+v, want %s used by both boxes", g2, g.Key)
		}
		if r := corral(t, dir2, nil, "delete", "--yes"); r.code != 0 {
			t.Fatalf("delete: %s", r.stderr)
		}
	})

	t.Run("snapshot list and delete", func(t *testing.T) {
		r := corral(t, dir, nil, "snapshot", "list", "--json")
		if r.code != 0 || !strings.Contains(r.stdout, `"name": "before"`) {
			t.Fatalf("snapshot list: exit %d: %s", r.code, r.stdout)
		}
		if r := corral(t, dir, nil, "snapshot", "delete", "before"); r.code != 0 {
			t.Fatalf("snapshot delete: exit %d: %s", r.code, r.stderr)
		}
		if r := corral(t, dir, nil, "undo"); r.code != 1 || !strings.Contains(r.stderr, "no snapshot") {
			t.Fatalf("undo without snapshots: exit %d, stderr %q", r.code, r.stderr)
		}
	})

	// A state QEMU cannot load makes the box boot from the golden disk instead, and its session
	// runs. The plan a box's first start reads is written by hand here (the box already used its
	// own), naming a state that is not one; the golden base is left alone.
	t.Run("a state that cannot be resumed falls back to a boot", func(t *testing.T) {
		if r := corral(t, dir, nil, "stop"); r.code != 0 {
			t.Fatalf("stop: %s", r.stderr)
		}
		bad := filepath.Join(e2eBase, "not-a-state")
		writeFile(t, bad, "not a QEMU state\n", 0o644)
		plan, _ := json.Marshal(map[string]string{"state": bad, "golden": disk, "key": g.Key})
		writeFile(t, filepath.Join(inst, "corral-resume.json"), string(plan), 0o644)
		r := corral(t, dir, nil, "run", "--", "cat", "README")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "hello" {
			t.Fatalf("run after a failed resume: exit %d, stdout %q: %s", r.code, r.stdout, r.stderr)
		}
		resumed := strings.Index(r.stderr, "resume golden state")
		if resumed < 0 || !strings.Contains(r.stderr[resumed:], "corral: boot") {
			t.Fatalf("want a resume attempt, then a boot:\n%s", r.stderr)
		}
		if log, err := os.ReadFile(filepath.Join(suite.home, "logs", "box-"+box+".log")); err != nil || !strings.Contains(string(log), "resuming golden state "+g.Key+" failed") {
			t.Errorf("the box log does not say the resume failed (%v)", err)
		}
		if _, err := os.Stat(filepath.Join(inst, "corral-resume.json")); err == nil {
			t.Error("the resume plan is still there after the start")
		}
		if sum := sha256File(t, disk); sum != g.SHA256 {
			t.Fatalf("golden disk sha256 %s, recorded %s", sum, g.SHA256)
		}
	})
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// diskHolds reports whether the stopped box's disk, read through its backing chain as the box
// sees it (qemu-img convert flattens it into one file), contains s anywhere.
func diskHolds(t *testing.T, diffdisk, s string) bool {
	t.Helper()
	flat := filepath.Join(t.TempDir(), "flat.qcow2")
	if out, err := exec.Command("qemu-img", "convert", "-O", "qcow2", diffdisk, flat).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img convert %s: %v: %s", diffdisk, err, out)
	}
	defer os.Remove(flat)
	err := exec.Command("grep", "-q", "-a", "-F", s, flat).Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false
	}
	t.Fatalf("grep %s: %v", flat, err)
	return false
}
