package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// snapshotBox is a $CORRAL_HOME with one stopped box whose diffdisk is a real qcow2 disk, and a
// fake limactl doing what Lima does for a stopped QEMU box: `snapshot create|delete --tag T BOX`
// runs `qemu-img snapshot -c|-d T` on the box's diffdisk. Everything else it refuses.
type snapshotBox struct {
	m    *vm.Manager
	box  string
	disk string
}

func newSnapshotBox(t *testing.T) *snapshotBox {
	t.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Fatalf("qemu-img is needed (scripts/setup.sh installs qemu-utils): %v", err)
	}
	h := home.Home{Dir: t.TempDir()}
	t.Setenv("LIMA_HOME", h.LimaHome())
	s := &snapshotBox{box: "proj-abc123"}
	inst := filepath.Join(h.LimaHome(), s.box)
	must(t, os.MkdirAll(inst, 0o700))
	must(t, os.WriteFile(filepath.Join(inst, "lima.yaml"), []byte("vmType: qemu\nimages: [{location: /x, arch: x86_64}]\n"), 0o600))
	s.disk = filepath.Join(inst, "diffdisk")
	qemuImg(t, "create", "-q", "-f", "qcow2", s.disk, "16M")
	limactl := filepath.Join(h.Dir, "limactl")
	script := `#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != snapshot ]; do shift; done
case "$2" in create) op=-c ;; delete) op=-d ;; *) exit 1 ;; esac
[ "$3" = --tag ] || exit 1
exec qemu-img snapshot "$op" "$4" "$LIMA_HOME/$5/diffdisk"
`
	must(t, os.WriteFile(limactl, []byte(script), 0o755))
	s.m = &vm.Manager{Limactl: limactl, Home: h}
	if st, err := s.m.Inspect(s.box); err != nil || st.Status != "Stopped" {
		t.Fatalf("the stand-in box is %q, %v; want Stopped", st.Status, err)
	}
	return s
}

func qemuImg(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("qemu-img", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("qemu-img %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// snapshots names the snapshots on the box's disk, read by qemu-img itself, oldest first.
func (s *snapshotBox) snapshots(t *testing.T) []string {
	t.Helper()
	snaps, err := s.m.Snapshots(context.Background(), s.box)
	must(t, err)
	var names []string
	for _, sn := range snaps {
		names = append(names, sn.Name)
	}
	return names
}

// TestAutoSnapshot: with snapshot = "auto", the way to a session (BeforeSession, before the box
// boots) takes a snapshot of the stopped box's disk and prunes the automatic ones to
// snapshots_keep, oldest first, never a named one; with snapshot off (the control) the disk is
// left as it was, and with a larger snapshots_keep nothing is pruned. The disk already holds a
// named snapshot and three automatic ones of earlier sessions.
func TestAutoSnapshot(t *testing.T) {
	earlier := []string{"before-upgrade", "auto-20200101T000001Z", "auto-20200101T000002Z", "auto-20200101T000003Z"}
	cases := []struct {
		name     string
		snapshot bool
		keep     int
		want     []string // the earlier ones kept, then "NEW" for the one this session took
	}{
		{"off", false, 2, earlier},
		{"auto, keep 2", true, 2, []string{"before-upgrade", "auto-20200101T000003Z", "NEW"}},
		{"auto, keep 10", true, 10, append(append([]string{}, earlier...), "NEW")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSnapshotBox(t)
			for _, n := range earlier {
				qemuImg(t, "snapshot", "-c", n, s.disk)
			}
			cfg := policy.Default()
			cfg.Snapshot = c.snapshot
			cfg.SnapshotsKeep = c.keep
			var notices []string
			BeforeSession(context.Background(), s.m, s.box, cfg, func(n string) { notices = append(notices, n) })
			got := s.snapshots(t)
			if len(got) != len(c.want) {
				t.Fatalf("snapshots on the disk: %q, want %q; notices %q", got, c.want, notices)
			}
			for i, w := range c.want {
				if w == "NEW" && (!strings.HasPrefix(got[i], vm.AutoSnapshotPrefix) || strings.HasPrefix(got[i], "auto-2020")) || w != "NEW" && got[i] != w {
					t.Fatalf("snapshots on the disk: %q, want %q (NEW: one taken now); notices %q", got, c.want, notices)
				}
			}
			said := strings.Join(notices, "\n")
			if took := strings.Contains(said, "taken ('git corral undo' restores it)"); took != c.snapshot {
				t.Errorf("notices %q: a snapshot announced = %v, want %v", said, took, c.snapshot)
			}
		})
	}
}

// TestAuditIdleStops: each box StopIdle stopped is a "stop" record naming who stopped it and
// its idle_stop; a box it found idle but did not stop (the control) is not.
func TestAuditIdleStops(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	m := &vm.Manager{Home: h}
	boxes := []vm.IdleBox{
		{Box: "stopped-1", IdleSecs: 90, Limit: "1m0s", Stopped: true},
		{Box: "busy-2", IdleSecs: 90, Limit: "1m0s", Error: "box is busy"},
	}
	must(t, AuditIdleStops(context.Background(), m, boxes, "git corral gc"))
	res, err := audit.Read(filepath.Join(h.Logs(), "sessions.jsonl"), audit.Filter{})
	must(t, err)
	if len(res.Records) != 1 {
		t.Fatalf("records: %+v, want one stop", res.Records)
	}
	r := res.Records[0]
	if r.Event != audit.EventStop || r.Box != "stopped-1" || !strings.Contains(r.Detail, "git corral gc: idle_stop 1m0s (no session for 1m30s)") {
		t.Fatalf("record %+v", r)
	}
}
