package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/vm"
)

// statusHome is a temporary CORRAL_HOME with Lima's store pointed into it.
func statusHome(t *testing.T) (home.Home, *vm.Manager) {
	t.Helper()
	h := home.Home{Dir: t.TempDir()}
	t.Setenv("LIMA_HOME", h.LimaHome())
	return h, &vm.Manager{Home: h}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustStatus(t *testing.T, h home.Home, m *vm.Manager, box string) StatusReport {
	t.Helper()
	r, err := Status(context.Background(), h, m, box, "/src/p")
	if err != nil {
		t.Fatalf("status of %q: %v", box, err)
	}
	return r
}

// deadPID is the PID of a process that has ended and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// TestStatusNoBox: a box that was never created is reported, not an error: exists and running
// false, the box named, and every list an empty JSON array rather than null.
func TestStatusNoBox(t *testing.T) {
	h, m := statusHome(t)
	for _, mgr := range []*vm.Manager{m, nil} {
		r := mustStatus(t, h, mgr, "nobox")
		if r.Box != "nobox" || r.Exists || r.Running || r.Limactl != (mgr != nil) {
			t.Errorf("limactl %v: got %+v, want box nobox, not existing, not running", mgr != nil, r)
		}
		b, _ := json.Marshal(r)
		for _, key := range []string{`"forwardedPorts":[]`, `"denials":[]`, `"problems":[]`, `"exists":false`, `"running":false`} {
			if !strings.Contains(string(b), key) {
				t.Errorf("JSON lacks %s: %s", key, b)
			}
		}
	}
}

// TestStatusLimaState: a box whose host agent and driver PID files name live processes is
// running; the same box with a dead host agent exists but is not running (read through Lima's
// store, and read from the files alone when there is no limactl).
func TestStatusLimaState(t *testing.T) {
	h, m := statusHome(t)
	inst := filepath.Join(h.LimaHome(), "b1")
	writeFile(t, filepath.Join(inst, "lima.yaml"), "images:\n- location: /nonexistent.img\n")
	live, gone := strconv.Itoa(os.Getpid()), strconv.Itoa(deadPID(t))
	writeFile(t, filepath.Join(inst, "ssh.config"), "Host x\n")
	writeFile(t, filepath.Join(inst, "qemu.pid"), live)
	cases := []struct {
		name        string
		mgr         *vm.Manager
		haPID       string
		wantRunning bool
	}{
		{"store, running", m, live, true},
		{"store, host agent gone", m, gone, false},
		{"files, running", nil, live, true},
		{"files, host agent gone", nil, gone, false},
	}
	for _, tc := range cases {
		writeFile(t, filepath.Join(inst, "ha.pid"), tc.haPID)
		r := mustStatus(t, h, tc.mgr, "b1")
		if !r.Exists || r.Running != tc.wantRunning {
			t.Errorf("%s: exists %v running %v (state %q, problems %q), want exists, running %v",
				tc.name, r.Exists, r.Running, r.State, r.Problems, tc.wantRunning)
		}
	}
}

// TestStatusBroker: the broker counts as running only while the recorded PID is a live broker
// of this box: a real child whose argv is "broker serve --box b1" is running, the same PID after
// it ended is not, and a live process that is not this box's broker (a reused PID) is not.
func TestStatusBroker(t *testing.T) {
	h, m := statusHome(t)
	child := exec.Command("sh", "-c", "sleep 60; :", "git-corral", "broker", "serve", "--box", "b1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	other := exec.Command("sh", "-c", "sleep 60; :", "git-corral", "broker", "serve", "--box", "b2")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	meta := func(pid int) {
		if err := m.WriteMeta(vm.Meta{Box: "b1", Network: "broker", BrokerPort: 40123, BrokerPID: pid, Golden: "g-abc"}); err != nil {
			t.Fatal(err)
		}
	}
	meta(child.Process.Pid)
	if r := mustStatus(t, h, m, "b1"); !r.Broker.Running || r.Broker.Port != 40123 || r.Network != "broker" || r.Golden != "g-abc" {
		t.Fatalf("live broker: got %+v (network %q, golden %q), want running on 40123 in broker mode from g-abc", r.Broker, r.Network, r.Golden)
	}
	meta(other.Process.Pid)
	if r := mustStatus(t, h, m, "b1"); r.Broker.Running {
		t.Errorf("another box's broker counted as b1's: %+v", r.Broker)
	}
	meta(child.Process.Pid)
	if err := syscall.Kill(child.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	if r := mustStatus(t, h, m, "b1"); r.Broker.Running || r.Broker.PID != child.Process.Pid {
		t.Errorf("dead broker: got %+v, want the recorded PID, not running", r.Broker)
	}
}

// TestStatusLastGuard: the newest launch (guards passed) or guard-failure record of this box
// is the outcome; other boxes' records and other events do not count.
func TestStatusLastGuard(t *testing.T) {
	h, m := statusHome(t)
	log := &audit.Log{Path: h.SessionsLog()}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	appendRec := func(ev audit.Event, box string, at time.Duration, detail string) {
		if err := log.Append(context.Background(), audit.Record{Time: t0.Add(at), Event: ev, Box: box, Detail: detail}); err != nil {
			t.Fatal(err)
		}
	}
	if r := mustStatus(t, h, m, "b1"); r.LastGuard != nil {
		t.Fatalf("no audit log: got %+v, want nil", r.LastGuard)
	}
	appendRec(audit.EventLaunch, "b1", 0, "")
	appendRec(audit.EventGuardFailure, "b1", time.Minute, "lockdown not active")
	appendRec(audit.EventLaunch, "b2", 2*time.Minute, "")
	appendRec(audit.EventExit, "b1", 3*time.Minute, "")
	r := mustStatus(t, h, m, "b1")
	if g := r.LastGuard; g == nil || g.Passed || !g.Time.Equal(t0.Add(time.Minute)) || g.Detail != "lockdown not active" {
		t.Fatalf("after a failure: got %+v, want the failure at %v", g, t0.Add(time.Minute))
	}
	appendRec(audit.EventLaunch, "b1", 4*time.Minute, "")
	if g := mustStatus(t, h, m, "b1").LastGuard; g == nil || !g.Passed || !g.Time.Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("after a launch: got %+v, want passed at %v", g, t0.Add(4*time.Minute))
	}
}

// TestStatusDenials: the newest denials come first, at most StatusDenials of them, allowed
// attempts are left out, and the report carries names only: no request path (which may hold a
// token) and nothing of an entry but its time, destination and reason.
func TestStatusDenials(t *testing.T) {
	h, m := statusHome(t)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var lines []string
	line := func(i int, decision, host string) {
		b, _ := json.Marshal(map[string]any{"time": t0.Add(time.Duration(i) * time.Second), "box": "b1", "method": "GET",
			"host": host, "port": 443, "decision": decision, "reason": "host not in allow-list",
			"route": "api", "path": "/v1/x?token=SECRETVALUE", "addr": "203.0.113.9:443"})
		lines = append(lines, string(b))
	}
	for i := 0; i < 4; i++ {
		line(i, "deny", fmt.Sprintf("old%d.example", i))
	}
	writeFile(t, h.EgressLog("b1")+".1", strings.Join(lines, "\n")+"\n")
	lines = nil
	for i := 4; i < 8; i++ {
		line(i, "deny", fmt.Sprintf("new%d.example", i))
	}
	line(8, "allow", "allowed.example")
	writeFile(t, h.EgressLog("b1"), strings.Join(lines, "\n")+"\nnot json\n")
	r := mustStatus(t, h, m, "b1")
	var got []string
	for _, d := range r.Denials {
		got = append(got, d.Host)
	}
	want := "new7.example new6.example new5.example new4.example old3.example"
	if strings.Join(got, " ") != want {
		t.Errorf("denials %q, want %q", got, want)
	}
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), "SECRETVALUE") || strings.Contains(string(b), "allowed.example") {
		t.Errorf("report carries a request path or an allowed attempt: %s", b)
	}
}

// TestStatusSessions: a live session (vm.BeginSession in this process) makes the box's
// sessions open; after it ends they are closed with the time it was last alive. A process
// holding the connection holder's lock is a holder; without it there is none.
func TestStatusSessions(t *testing.T) {
	h, m := statusHome(t)
	if s := mustStatus(t, h, m, "b1").Sessions; s.Open || s.LastActive != nil || s.ConnectionHolder {
		t.Fatalf("no marker: got %+v, want nothing open", s)
	}
	end, err := m.BeginSession(context.Background(), "b1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if s := mustStatus(t, h, m, "b1").Sessions; !s.Open || s.LastActive == nil {
		t.Errorf("live session: got %+v, want open", s)
	}
	end()
	if s := mustStatus(t, h, m, "b1").Sessions; s.Open || s.LastActive == nil {
		t.Errorf("ended session: got %+v, want closed with a last-active time", s)
	}
	lock := vm.HolderPaths(h, "b1").Lock()
	writeFile(t, lock, "")
	if mustStatus(t, h, m, "b1").Sessions.ConnectionHolder {
		t.Errorf("an unheld lock file counted as a holder")
	}
	f, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if !mustStatus(t, h, m, "b1").Sessions.ConnectionHolder {
		t.Errorf("a held lock was not counted as a holder")
	}
}

// TestStatusDisk: disk use counts the blocks allocated, like du: a sparse 1 GiB diffdisk with
// 64 KiB written counts far less than its size, and the instance total includes it.
func TestStatusDisk(t *testing.T) {
	h, m := statusHome(t)
	inst := filepath.Join(h.LimaHome(), "b1")
	writeFile(t, filepath.Join(inst, "lima.yaml"), strings.Repeat("#", 8192))
	f, err := os.Create(filepath.Join(inst, "diffdisk"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 64<<10), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	d := mustStatus(t, h, m, "b1").Disk
	if d.DiffDiskBytes < 64<<10 || d.DiffDiskBytes >= 1<<30 || d.InstanceBytes < d.DiffDiskBytes+8192 {
		t.Errorf("disk %+v: want diffdisk between 64 KiB and 1 GiB, instance at least 8 KiB more", d)
	}
}

// TestStatusBadMeta: metadata that does not parse is a problem in the report, not a failure,
// and names the file; the facts from elsewhere are still there.
func TestStatusBadMeta(t *testing.T) {
	h, m := statusHome(t)
	writeFile(t, h.BoxMeta("b1"), "{not json")
	r := mustStatus(t, h, m, "b1")
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], h.BoxMeta("b1")) || r.Box != "b1" {
		t.Errorf("got problems %q, want one naming %s", r.Problems, h.BoxMeta("b1"))
	}
}
