package vm

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
)

// TestCheckSnapshotName: hostile names are refused before they reach limactl or qemu-img.
func TestCheckSnapshotName(t *testing.T) {
	ok := []string{"a", "auto-20261130T011900Z", "before.upgrade", "x_1", strings.Repeat("a", 63)}
	bad := []string{"", "-tag", ".hidden", "a b", "a\nb", "a\x00b", "../x", "a/b", "ü", "a;rm", strings.Repeat("a", 64), "\x1b[31m", "a\u202eb"}
	for _, n := range ok {
		if err := CheckSnapshotName(n); err != nil {
			t.Errorf("CheckSnapshotName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range bad {
		if err := CheckSnapshotName(n); err == nil {
			t.Errorf("CheckSnapshotName(%q) = nil, want an error", n)
		}
	}
}

// TestParseSnapshots reads what this machine's qemu-img prints for a disk with snapshots.
func TestParseSnapshots(t *testing.T) {
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed (scripts/setup.sh installs qemu-utils)")
	}
	disk := filepath.Join(t.TempDir(), "diffdisk")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", disk, "16M")
	for _, n := range []string{"auto-20261130T010000Z", "mine", "auto-20261130T020000Z"} {
		run(t, "qemu-img", "snapshot", "-c", n, disk)
		time.Sleep(1100 * time.Millisecond) // qemu-img dates have one-second resolution
	}
	out, err := exec.Command("qemu-img", "info", "-U", "--output=json", disk).Output()
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := parseSnapshots(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range snaps {
		got = append(got, s.Name)
		if s.Auto != strings.HasPrefix(s.Name, "auto-") || time.Since(s.Created) > time.Minute {
			t.Errorf("snapshot %+v: wrong auto flag or date", s)
		}
	}
	if strings.Join(got, ",") != "auto-20261130T010000Z,mine,auto-20261130T020000Z" {
		t.Fatalf("snapshots %v, want the three, oldest first", got)
	}
	if s, err := parseSnapshots([]byte(`{"format":"qcow2"}`)); err != nil || len(s) != 0 {
		t.Fatalf("no snapshots: %v, %v", s, err)
	}
	if _, err := parseSnapshots([]byte(`not json`)); err == nil {
		t.Fatal("garbage parsed")
	}
}

// TestSessionMarker: a live session holds its box; after it ends the box is idle from the end,
// with the idle_stop the session recorded.
func TestSessionMarker(t *testing.T) {
	m := &Manager{Home: home.Home{Dir: t.TempDir()}}
	if since, _, busy := m.lastSession("b", time.Minute); !since.IsZero() || busy {
		t.Fatalf("no marker, no ha.pid: since %v busy %v, want nothing", since, busy)
	}
	end, err := m.BeginSession(context.Background(), "b", 45*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, busy := m.lastSession("b", time.Minute); !busy {
		t.Fatal("a live session is not seen as busy")
	}
	end()
	since, limit, busy := m.lastSession("b", time.Minute)
	if busy || limit != 45*time.Minute || time.Since(since) > 5*time.Second {
		t.Fatalf("after the session: since %v limit %v busy %v, want now, 45m, false", since, limit, busy)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(m.sessionPath("b"), old, old); err != nil {
		t.Fatal(err)
	}
	if since, _, _ := m.lastSession("b", time.Minute); !since.Equal(old) {
		t.Fatalf("since %v, want the marker's mtime %v", since, old)
	}
}

// TestIdleBoxes: a running box (a Lima instance directory whose host agent and QEMU pids are
// alive: this test process stands in for both) is idle once its last session is older than
// idle_stop, never while a session holds it or its watcher lives (the watcher stops it), and
// never with a limit of 0.
func TestIdleBoxes(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	t.Setenv("LIMA_HOME", h.LimaHome())
	m := &Manager{Home: h}
	inst := filepath.Join(h.LimaHome(), "b1")
	if err := os.MkdirAll(inst, 0o700); err != nil {
		t.Fatal(err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	for f, b := range map[string][]byte{"lima.yaml": []byte("vmType: qemu\nimages: [{location: /x, arch: x86_64}]\n"), "ha.pid": pid, "qemu.pid": pid} {
		if err := os.WriteFile(filepath.Join(inst, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The host agent's API socket, answered as Lima's host agent would (a fake at the process
	// boundary: Inspect asks it for the SSH port).
	l, err := net.Listen("unix", filepath.Join(inst, "ha.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"sshLocalPort": 22}`))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	if st, err := m.Inspect("b1"); err != nil || st.Status != "Running" {
		t.Skipf("Lima does not see the stand-in instance as running (%v, %q %v): cannot test idle detection here", err, st.Status, st.Errors)
	}
	end, err := m.BeginSession(context.Background(), "b1", 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if idle, _ := m.IdleBoxes(later, time.Minute); len(idle) != 0 {
		t.Fatalf("box with a live session reported idle: %+v", idle)
	}
	end()
	// A live watcher holds the box: it, not the marker's mtime, says when the idle time began.
	if err := h.MkdirAll(h.Boxes()); err != nil {
		t.Fatal(err)
	}
	unlockWatch, err := lockWatch(filepath.Join(h.Boxes(), "b1.watch"))
	if err != nil {
		t.Fatal(err)
	}
	if idle, _ := m.IdleBoxes(later, time.Minute); len(idle) != 0 {
		t.Fatalf("a box its watcher watches reported idle to others: %+v", idle)
	}
	unlockWatch()
	idle, err := m.IdleBoxes(later, time.Minute)
	if err != nil || len(idle) != 1 || idle[0].Box != "b1" || idle[0].Limit != "30m0s" {
		t.Fatalf("an hour after the session, no watcher: %+v, %v; want b1 idle against its 30m", idle, err)
	}
	if idle, _ := m.IdleBoxes(time.Now().Add(10*time.Minute), time.Minute); len(idle) != 0 {
		t.Fatalf("10 minutes after the session, under 30m: %+v", idle)
	}
	end0, err := m.BeginSession(context.Background(), "b1", 0)
	if err != nil {
		t.Fatal(err)
	}
	end0()
	if idle, _ := m.IdleBoxes(later.Add(24*time.Hour), time.Minute); len(idle) != 0 {
		t.Fatalf("idle_stop 0 must never stop: %+v", idle)
	}
}
