package dashboard

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/vm"
)

// TestLoadReadsBoxesFromCorralHome builds a $CORRAL_HOME with real metadata files and a real
// egress log (the broker's writer) and reads it with Lima's real store (no instance: absent).
func TestLoadReadsBoxesFromCorralHome(t *testing.T) {
	h := testHome(t)
	writeMeta(t, h, vm.Meta{Box: "alpha", Project: "/src/alpha", Network: "broker"})
	writeMeta(t, h, vm.Meta{Box: "beta", Project: "/src/beta", Network: "off"})
	// Files beside the metadata that are not boxes.
	for _, f := range []string{"alpha.yaml", "alpha.session", "alpha.json.broker-secret", ".json"} {
		if err := os.WriteFile(h.Boxes()+"/"+f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logEntry(t, h, "alpha", allow("proxy.golang.org", 443, "proxy.golang.org"))
	logEntry(t, h, "alpha", deny("first.example", 443, "host not in allow-list"))
	logEntry(t, h, "alpha", deny("10.0.0.1", 22, "address is private"))
	m := &vm.Manager{Home: h}
	l := &Loader{Home: h, Inspect: m.Inspect, ReadEgress: readLog}
	snap, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Boxes) != 2 || snap.Boxes[0].Name != "alpha" || snap.Boxes[1].Name != "beta" {
		t.Fatalf("boxes = %+v, want alpha and beta only", snap.Boxes)
	}
	a, b := snap.Boxes[0], snap.Boxes[1]
	if a.State != StateAbsent || a.Network != "broker" || a.Project != "/src/alpha" || a.Session != "none" {
		t.Errorf("alpha = %+v", a)
	}
	if a.Denials != 2 || a.LastDenial == nil || a.LastDenial.Host != "10.0.0.1" {
		t.Errorf("alpha denials = %d, last %+v; want 2, last 10.0.0.1", a.Denials, a.LastDenial)
	}
	if b.Denials != 0 || b.LastDenial != nil || b.Network != "off" {
		t.Errorf("beta = %+v, want no denials", b)
	}
	if len(snap.Recent) != 2 || snap.Recent[1].Host != "10.0.0.1" || snap.Recent[1].Box != "alpha" {
		t.Errorf("recent = %+v, want both denials of alpha, newest last", snap.Recent)
	}
}

// TestLoadSeesDenialLoggedSinceLastLoad is the no-restart promise at the data level: every load
// reads the log again.
func TestLoadSeesDenialLoggedSinceLastLoad(t *testing.T) {
	h := testHome(t)
	writeMeta(t, h, vm.Meta{Box: "alpha", Network: "broker"})
	l := &Loader{Home: h, ReadEgress: readLog}
	before, err := l.Load()
	if err != nil || before.Boxes[0].Denials != 0 {
		t.Fatalf("before = %+v, %v; want no denials", before.Boxes, err)
	}
	logEntry(t, h, "alpha", deny("late.example", 443, "host not in allow-list"))
	after, err := l.Load()
	if err != nil || after.Boxes[0].Denials != 1 || after.Recent[0].Host != "late.example" {
		t.Fatalf("after = %+v, %v; want the new denial", after, err)
	}
}

// TestSessionLiveThenIdle holds the session mark's shared lock as a session does: the box shows
// a live session; once it is released, the box is idle since the mark's mtime.
func TestSessionLiveThenIdle(t *testing.T) {
	h := testHome(t)
	writeMeta(t, h, vm.Meta{Box: "alpha"})
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	running := func(box string) (vm.Status, error) { return vm.Status{Name: box, Status: "Running"}, nil }
	l := &Loader{Home: h, Inspect: running, Now: func() time.Time { return now }}
	f, err := os.OpenFile(h.BoxSessionMark("alpha"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(h.BoxSessionMark("alpha"), now.Add(-5*time.Minute), now.Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	snap, _ := l.Load()
	if b := snap.Boxes[0]; b.Session != "live" || b.Idle != 0 || b.State != "Running" {
		t.Fatalf("with a session: %+v, want live and not idle", b)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Load()
	if b := snap.Boxes[0]; b.Session != "none" || b.Idle != 5*time.Minute {
		t.Fatalf("after the session: %+v, want idle 5m0s", b)
	}
}

// TestLoadNamesUnreadableMetadata lists a box whose metadata is not JSON, with the file named.
func TestLoadNamesUnreadableMetadata(t *testing.T) {
	h := testHome(t)
	writeMeta(t, h, vm.Meta{Box: "good"})
	if err := os.WriteFile(h.BoxMeta("bad"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := (&Loader{Home: h}).Load()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Boxes[0].Name != "bad" || snap.Boxes[0].Problem == "" || snap.Boxes[1].Problem != "" {
		t.Fatalf("boxes = %+v, want bad with its problem and good without", snap.Boxes)
	}
}

// TestEgressLogReadAgainOnlyWhenItChanged: polls of an unchanged log do not read it again; an
// appended line (the control) and a rotation do.
func TestEgressLogReadAgainOnlyWhenItChanged(t *testing.T) {
	h := testHome(t)
	writeMeta(t, h, vm.Meta{Box: "alpha"})
	logEntry(t, h, "alpha", deny("one.example", 443, "host not in allow-list"))
	reads := 0
	l := &Loader{Home: h, ReadEgress: func(p string) ([]broker.Entry, int, error) { reads++; return readLog(p) }}
	load := func() Snapshot {
		t.Helper()
		s, err := l.Load()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	load()
	load()
	if reads != 1 {
		t.Fatalf("two polls of an unchanged log read it %d times, want 1", reads)
	}
	logEntry(t, h, "alpha", deny("two.example", 443, "host not in allow-list"))
	if s := load(); reads != 2 || s.Boxes[0].Denials != 2 {
		t.Fatalf("after an append: %d reads, %d denials; want 2 and 2", reads, s.Boxes[0].Denials)
	}
	if err := os.Rename(h.EgressLog("alpha"), h.EgressLog("alpha")+".1"); err != nil {
		t.Fatal(err)
	}
	logEntry(t, h, "alpha", deny("three.example", 443, "host not in allow-list"))
	if s := load(); reads != 3 || s.Boxes[0].Denials != 3 || s.Boxes[0].LastDenial.Host != "three.example" {
		t.Fatalf("after a rotation: %d reads, %+v; want 3 reads and 3 denials", reads, s.Boxes[0])
	}
}
