package e2e

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hostProbe is a TCP and a UDP listener on the host's 127.0.0.1, a TCP listener on its ::1 and
// a DNS responder on its 127.0.0.1 (probes_test.go), each counting what reaches it. The guest
// reaches the host's 127.0.0.1 as 192.168.5.2 and its ::1 as fec0::2 in Lima's user-mode
// network: these are the "host loopback services behind the gateway" a locked-down box must not
// reach.
type hostProbe struct {
	port, port6, dnsPort int
	tcp, udp, tcp6, dns  atomic.Int32
	closeFunc            func()
}

func newHostProbe(t *testing.T) *hostProbe {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &hostProbe{port: ln.Addr().(*net.TCPAddr).Port}
	pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	go acceptCount(ln, &p.tcp)
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			p.udp.Add(1)
		}
	}()
	p.closeFunc = func() { ln.Close(); pc.Close() }
	t.Cleanup(p.closeFunc)
	p.listenProbe6(t)
	p.listenDNS(t)
	return p
}

// lockdownHolds checks from inside the box, as the box user, every way out THREATS.md §5 names
// for a locked-down box (waysOut, each of which gets through a full box: TestLockdownControls),
// and the guard checks themselves: the session check (what runs before every session) and the
// deep check (as root through the one fixed sudoers entry).
func lockdownHolds(t *testing.T, dir, mode string, probe *hostProbe) {
	t.Helper()
	before := probe.counts()
	for _, w := range waysOut(probe) {
		if tryWayOut(t, dir, probe, w) {
			t.Errorf("%s mode: %s got through", mode, w.name)
		}
	}
	// su fails in every box because the image locks root's password (TestLockdownControls
	// checks that in a full box); it is tried here as a belt, not counted as the lockdown's proof.
	if r := corral(t, dir, nil, "run", "--", "bash", "-c", "su -c true root </dev/null"); r.code == 0 {
		t.Errorf("%s mode: su got through", mode)
	}
	pkexecAbsent(t, dir, mode)
	guestAgentNotRoot(t, dir, mode) // guestagent_test.go
	if got := probe.counts(); got != before {
		t.Errorf("%s mode: the host's listeners counted %+v after the probes, %+v before", mode, got, before)
	}
	for _, argv := range [][]string{
		{"/usr/local/libexec/corral/guard-check", "session"},
		{"sudo", "-n", "/usr/local/libexec/corral/guard-check"},
	} {
		r := corral(t, dir, nil, append([]string{"run", "--"}, argv...)...)
		var rep struct {
			OK       bool     `json:"ok"`
			Mode     string   `json:"mode"`
			Failures []string `json:"failures"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &rep); err != nil || r.code != 0 || !rep.OK || rep.Mode != mode {
			t.Errorf("%s: exit %d, report %+v (%v): %s %s", strings.Join(argv, " "), r.code, rep, err, r.stdout, r.stderr)
		}
	}
	// Each way the host runs the check passes on a box whose guards hold: the resident daemon
	// (the default), in-band and separately.
	for _, how := range []string{"daemon", "inband", "separate"} {
		if r := corral(t, dir, []string{"CORRAL_GUARD_CHECK=" + how}, "run", "--", "true"); r.code != 0 {
			t.Errorf("%s mode, CORRAL_GUARD_CHECK=%s: exit %d: %s", mode, how, r.code, r.stderr)
		}
	}
}

// TestOfflineMode is the offline group: from no box, every way out fails and the guards hold,
// and the approved provision script, which runs after the lockdown, cannot reach the host; then
// the VM is killed in the middle of a session, the session fails, and the next run boots the box
// again with every guard in place and the provision script locked in again.
func TestOfflineMode(t *testing.T) {
	group(t)
	dir := newProject(t, "offline")
	box := boxName(t, dir)
	cleanupBox(t, box)
	writeFile(t, filepath.Join(suite.home, "projects", box+".toml"), "network = \"offline\"\n", 0o600)
	probe := newHostProbe(t)
	addProvisionProbe(t, dir, probe)
	t.Run("run --yes boots an offline box", func(t *testing.T) {
		if r := corral(t, dir, nil, "run", "--yes", "--", "true"); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
	})
	t.Run("the approved provision script ran after the lockdown: its network probe was refused", func(t *testing.T) {
		provisionProbeSaw(t, dir, "offline", "closed", 1)
	})
	t.Run("no way out, no way to root, as the box user", func(t *testing.T) {
		lockdownHolds(t, dir, "offline", probe)
	})
	t.Run("the VM killed mid-session: the session fails, the next run recovers with every guard", func(t *testing.T) {
		pidFile := filepath.Join(suite.home, "lima", box, "qemu.pid")
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatalf("qemu pid: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("qemu pid %q: %v", b, err)
		}
		done := make(chan result, 1)
		go func() { done <- corral(t, dir, nil, "run", "--", "sleep", "120") }()
		time.Sleep(5 * time.Second)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill qemu %d: %v", pid, err)
		}
		select {
		case r := <-done:
			if r.code == 0 {
				t.Fatalf("the session survived its VM: exit 0")
			}
		case <-time.After(90 * time.Second):
			t.Fatal("the session did not end within 90 s of its VM being killed")
		}
		if r := corral(t, dir, nil, "run", "--", "true"); r.code != 0 {
			t.Fatalf("run after the kill: exit %d: %s", r.code, r.stderr)
		}
		lockdownHolds(t, dir, "offline", probe)
		provisionProbeSaw(t, dir, "offline", "closed", 2)
		n := 0
		for _, e := range list(t, dir) {
			if e.Box == box {
				n++
				if e.Status != "Running" {
					t.Errorf("box %s is %s after the recovery", box, e.Status)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d boxes named %s after the recovery, want 1", n, box)
		}
	})
	t.Run("audit names the guard-checked sessions", func(t *testing.T) {
		r := corral(t, dir, nil, "audit", "--json", "-n", "0", "--box", box)
		if r.code != 0 {
			t.Fatalf("audit --json: exit %d: %s", r.code, r.stderr)
		}
		launches := 0
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var rec struct {
				Event   string `json:"event"`
				Network string `json:"network"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("audit --json line %q: %v", line, err)
			}
			if rec.Event == "launch" && rec.Network == "offline" {
				launches++
			}
		}
		if launches < 10 {
			t.Errorf("audit shows %d offline launches, want one per session (at least 10)", launches)
		}
	})
}
