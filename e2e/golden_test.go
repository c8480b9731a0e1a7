package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenEntry is one base of git corral golden list --json.
type goldenEntry struct {
	Key    string   `json:"key"`
	Dir    string   `json:"dir"`
	SHA256 string   `json:"sha256"`
	Users  []string `json:"users"`
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

// TestGoldenSnapshotUndo is the golden group on one real box: the first box of a recipe builds
// the golden base and starts as an overlay of it; a snapshot of the stopped box, a change in the
// box, undo, and the change is gone (the mounted project's change stays, as every snapshot
// output says); the golden base's hash never changes while the box writes.
func TestGoldenSnapshotUndo(t *testing.T) {
	if os.Getenv("CORRAL_E2E_GOLDEN") != "1" {
		t.Skip("known failure, issue 12: a box started from a golden base fails the guest guard check " +
			"(/run/corral/shadow.expect missing after boot), so sessions on it are refused; golden is off " +
			"by default. Set CORRAL_E2E_GOLDEN=1 to run this group and reproduce it")
	}
	dir := newProject(t, "golden")
	box := boxName(t, dir)
	t.Cleanup(func() { corral(t, dir, nil, "golden", "prune") }) // runs after the box is deleted
	cleanupBox(t, box)
	// golden is off by default; the repository may turn it on (project-ok).
	writeFile(t, filepath.Join(dir, ".corral.toml"), "golden = true\n", 0o644)

	r := corral(t, dir, nil, "run", "--yes", "--", "true")
	if r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	gs := goldens(t, dir)
	if len(gs) != 1 || len(gs[0].Users) != 1 || gs[0].Users[0] != box {
		t.Fatalf("golden list = %+v, want one base used by %s", gs, box)
	}
	g := gs[0]
	disk := filepath.Join(g.Dir, "golden.qcow2")
	if fi, err := os.Stat(disk); err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("golden disk %s: %v, mode %v, want 0444", disk, err, fi.Mode())
	}
	if sum := sha256File(t, disk); sum != g.SHA256 {
		t.Fatalf("golden disk sha256 %s after the first box booted, recorded %s", sum, g.SHA256)
	}
	// The box's disk is an overlay of the base, not a copy of the image.
	inst := filepath.Join(suite.home, "lima", box)
	if fi, err := os.Stat(filepath.Join(inst, "diffdisk")); err != nil || fi.Size() > 200<<20 {
		t.Fatalf("box diffdisk: %v, size %d: want a small overlay", err, fi.Size())
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
		change := "echo changed | sudo tee /etc/corral-undo-test >/dev/null && touch ~/undo-marker && echo kept > " + dir + "/in-project"
		if r := corral(t, dir, nil, "run", "--", "sh", "-c", change); r.code != 0 {
			t.Fatalf("change: exit %d: %s", r.code, r.stderr)
		}
		if r := corral(t, dir, nil, "run", "--", "test", "-e", "/etc/corral-undo-test"); r.code != 0 {
			t.Fatalf("the change is not in the box before undo: exit %d", r.code)
		}
		r = corral(t, dir, nil, "undo", "--stop", "--json")
		var doc struct {
			Snapshot, Note string
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || doc.Snapshot != "before" || !strings.Contains(doc.Note, "NOT in the snapshot") {
			t.Fatalf("undo: exit %d, stdout %q: want snapshot before and the mount note", r.code, r.stdout)
		}
		r = corral(t, dir, nil, "run", "--", "sh", "-c", "test ! -e /etc/corral-undo-test && test ! -e ~/undo-marker && cat "+dir+"/in-project")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "kept" {
			t.Fatalf("after undo: exit %d, stdout %q: want the box's change gone and the project's file kept", r.code, r.stdout)
		}
	})

	t.Run("the golden base was never written", func(t *testing.T) {
		if sum := sha256File(t, disk); sum != g.SHA256 {
			t.Fatalf("golden disk sha256 %s, recorded %s", sum, g.SHA256)
		}
		if r := corral(t, dir, nil, "golden", "verify"); r.code != 0 || !strings.Contains(r.stdout, "unchanged") {
			t.Fatalf("golden verify: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("snapshot list and delete", func(t *testing.T) {
		if r := corral(t, dir, nil, "stop"); r.code != 0 {
			t.Fatalf("stop: %s", r.stderr)
		}
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
}
