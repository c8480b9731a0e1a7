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

// hostProbe is a TCP and a UDP listener on the host's loopback that count what reaches them.
// The guest reaches the host's 127.0.0.1 as 192.168.5.2 in Lima's user-mode network: these are
// the "host loopback services behind the gateway" a locked-down box must not reach.
type hostProbe struct {
	port      int
	tcp, udp  atomic.Int32
	closeFunc func()
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
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.tcp.Add(1)
			c.Close()
		}
	}()
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
	return p
}

// lockdownHolds checks from inside the box, as the box user, every way out THREATS.md §5 names
// for a locked-down box, and the guard checks themselves: the session check (what runs before
// every session) and the deep check (as root through the one fixed sudoers entry).
func lockdownHolds(t *testing.T, dir, mode string, probe *hostProbe) {
	t.Helper()
	port := strconv.Itoa(probe.port)
	before := probe.tcp.Load() + probe.udp.Load()
	for _, c := range []struct{ name, cmd string }{
		// A dropped SYN would hang until the kernel gives up: timeout(1) ends the try (exit 124).
		{"TCP to the host's loopback through the gateway", "timeout 5 bash -c 'exec 3<>/dev/tcp/192.168.5.2/" + port + "'"},
		{"UDP to the host's loopback through the gateway", "for i in 1 2 3; do echo x >/dev/udp/192.168.5.2/" + port + " || exit 1; done; exit 0"},
		{"IPv6 to the host (user-mode network's fec0::2)", "timeout 5 bash -c 'exec 3<>/dev/tcp/fec0::2/" + port + "'"},
		{"DNS through Lima's resolver", "getent hosts corral-e2e.invalid"},
		{"sudo", "sudo -n true"},
		{"pkexec (absent or refused)", "command -v pkexec >/dev/null || exit 1; pkexec true"},
		{"su", "su -c true root </dev/null"},
	} {
		r := corral(t, dir, nil, "run", "--timeout", "20s", "--", "bash", "-c", c.cmd)
		// The UDP sends "succeed" (no reply is awaited): only the listener can tell.
		if r.code == 0 && !strings.HasPrefix(c.name, "UDP") {
			t.Errorf("%s mode: %s succeeded (stdout %q)", mode, c.name, r.stdout)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if got := probe.tcp.Load() + probe.udp.Load(); got != before {
		t.Errorf("%s mode: %d connections or datagrams reached the host's loopback listener", mode, got-before)
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

// TestOfflineMode is the offline group: from no box, every way out fails and the guards hold;
// then the VM is killed in the middle of a session, the session fails, and the next run boots
// the box again with every guard in place.
func TestOfflineMode(t *testing.T) {
	dir := newProject(t, "offline")
	box := boxName(t, dir)
	cleanupBox(t, box)
	writeFile(t, filepath.Join(suite.home, "projects", box+".toml"), "network = \"offline\"\n", 0o600)
	probe := newHostProbe(t)
	t.Run("run --yes boots an offline box", func(t *testing.T) {
		if r := corral(t, dir, nil, "run", "--yes", "--", "true"); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
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
