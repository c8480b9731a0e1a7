package e2e

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The ways out of a box that a lockdown must close, each run as the box user, each with a real
// listener of the test's own on the host that counts what reaches it. Every way out is run twice:
// in a locked box it must not get through (lockdownHolds), and in a full box, where nothing
// blocks it, it must (TestLockdownControls): a probe that cannot get through a full box proves
// nothing about a locked one. What each probe reaches:
//   - the host's 127.0.0.1 behind the user-mode network's gateway 192.168.5.2 (TCP and UDP);
//   - the host's ::1 behind the gateway's IPv6 address fec0::2 (TCP);
//   - a DNS responder of the test's own on the host's 127.0.0.1, asked through the gateway: it
//     answers probeName with probeAnswer, which is never dialed.
// Lima's own resolver address 192.168.5.3 is asked only in the full box (where Lima DNATs it to
// the host agent, which answers host.lima.internal itself): in a broker or offline box Lima's
// host resolver is off and QEMU would forward that query to the host's real resolver, which no
// test may reach even when the lockdown under test is broken.

const (
	// probeName is the name the test's DNS responder answers.
	probeName = "probe.corral-e2e.test"
	// slirpGateway and slirpGateway6 are the host as the guest sees it; slirpDNS is Lima's
	// resolver address.
	slirpGateway, slirpGateway6, slirpDNS = "192.168.5.2", "fec0::2", "192.168.5.3"
)

// probeAnswer is the responder's answer (TEST-NET-1: nothing is ever sent to it).
var probeAnswer = net.IPv4(192, 0, 2, 53).To4()

// probeCounts is what the host-side listeners have seen.
type probeCounts struct{ tcp, udp, tcp6, dns int32 }

func (p *hostProbe) counts() probeCounts {
	return probeCounts{p.tcp.Load(), p.udp.Load(), p.tcp6.Load(), p.dns.Load()}
}

// listenProbe6 and listenDNS add the IPv6 listener and the DNS responder to p.
func (p *hostProbe) listenProbe6(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatalf("listen on the host's ::1 (the IPv6 probe needs it): %v", err)
	}
	p.port6 = ln.Addr().(*net.TCPAddr).Port
	go acceptCount(ln, &p.tcp6)
	t.Cleanup(func() { ln.Close() })
}

func acceptCount(ln net.Listener, n *atomic.Int32) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		n.Add(1)
		c.Close()
	}
}

func (p *hostProbe) listenDNS(t *testing.T) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.dnsPort = pc.LocalAddr().(*net.UDPAddr).Port
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := dnsReply(buf[:n], probeName, probeAnswer); reply != nil {
				p.dns.Add(1)
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close() })
}

// dnsQuery is a DNS query for name's A record with id.
func dnsQuery(id uint16, name string) []byte {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = append(b, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) // RD; one question
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		b = append(append(b, byte(len(l))), l...)
	}
	return append(b, 0, 0, 1, 0, 1) // root; A; IN
}

// dnsReply answers a query for name's A record with ip, or returns nil for anything else.
func dnsReply(q []byte, name string, ip net.IP) []byte {
	want := dnsQuery(0, name)
	if len(q) != len(want) || string(q[12:]) != string(want[12:]) {
		return nil
	}
	r := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0}, q[12:]...)
	r = append(r, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
	return append(r, ip.To4()...)
}

// dnsAsk is a guest script that sends a DNS query for name to addr:port over UDP and prints
// the reply in hex ("" when none came within 4 s). dd writes the query in one datagram
// (printf would split it at a newline byte).
func dnsAsk(id uint16, name, addr string, port int) string {
	var esc strings.Builder
	for _, c := range dnsQuery(id, name) {
		fmt.Fprintf(&esc, `\x%02x`, c)
	}
	return fmt.Sprintf(`exec 3<>/dev/udp/%s/%d || exit 9
printf '%s' | dd bs=512 count=1 iflag=fullblock 2>/dev/null >&3
timeout 4 dd bs=512 count=1 <&3 2>/dev/null | od -An -v -tx1 | tr -d ' \n'; echo`, addr, port, esc.String())
}

// dnsAnswered reports whether out (dnsAsk's hex) is a reply to id with ip among its answers.
func dnsAnswered(out string, id uint16, ip net.IP) bool {
	b, err := hex.DecodeString(strings.TrimSpace(out))
	if err != nil || len(b) < 12 || binary.BigEndian.Uint16(b) != id || b[2]&0x80 == 0 || binary.BigEndian.Uint16(b[6:]) == 0 {
		return false
	}
	return strings.Contains(string(b[12:]), string(ip.To4()))
}

// wayOut is one way out of a box: a bash script run as the box user, and whether it got through
// given its result and what the host's listeners counted meanwhile.
type wayOut struct {
	name    string
	script  string
	through func(r result, d probeCounts) bool
}

// waysOut are the ways out every lockdown closes and a full box leaves open.
func waysOut(p *hostProbe) []wayOut {
	port, port6 := strconv.Itoa(p.port), strconv.Itoa(p.port6)
	return []wayOut{
		// A dropped SYN would hang until the kernel gives up: timeout(1) ends the try (exit 124).
		{"TCP to the host's loopback through the gateway",
			"timeout 5 bash -c 'exec 3<>/dev/tcp/" + slirpGateway + "/" + port + "'",
			func(r result, d probeCounts) bool { return r.code == 0 || d.tcp > 0 }},
		// The sends "succeed" (no reply is awaited): only the listener can tell.
		{"UDP to the host's loopback through the gateway",
			"for i in 1 2 3; do echo x >/dev/udp/" + slirpGateway + "/" + port + "; sleep 0.2; done; exit 0",
			func(r result, d probeCounts) bool { return d.udp > 0 }},
		{"IPv6 TCP to the host's ::1 through the gateway's fec0::2",
			"timeout 5 bash -c 'exec 3<>/dev/tcp/" + slirpGateway6 + "/" + port6 + "'",
			func(r result, d probeCounts) bool { return r.code == 0 || d.tcp6 > 0 }},
		{"DNS to a responder on the host's loopback through the gateway",
			dnsAsk(0x4352, probeName, slirpGateway, p.dnsPort),
			func(r result, d probeCounts) bool { return dnsAnswered(r.stdout, 0x4352, probeAnswer) || d.dns > 0 }},
		{"sudo", "sudo -n true",
			func(r result, d probeCounts) bool { return r.code == 0 }},
	}
}

// tryWayOut runs w in dir's box and reports whether it got through.
func tryWayOut(t *testing.T, dir string, p *hostProbe, w wayOut) bool {
	t.Helper()
	before := p.counts()
	r := corral(t, dir, nil, "run", "--timeout", "30s", "--", "bash", "-c", "echo probe-ran; "+w.script)
	if !strings.HasPrefix(r.stdout, "probe-ran\n") {
		// A session that never ran its probe proves nothing either way.
		t.Errorf("%s: the probe never ran in the box (exit %d): %s", w.name, r.code, r.stderr)
	}
	r.stdout = strings.TrimPrefix(r.stdout, "probe-ran\n")
	time.Sleep(300 * time.Millisecond) // a datagram in flight reaches its listener
	after := p.counts()
	d := probeCounts{after.tcp - before.tcp, after.udp - before.udp, after.tcp6 - before.tcp6, after.dns - before.dns}
	return w.through(r, d)
}

// pkexecAbsent checks that pkexec is not installed in mode's box, with the lookup's own control
// (it finds su, which is): an absent pkexec is no way to root, and one that appears must be
// probed for real rather than counted as refused.
func pkexecAbsent(t *testing.T, dir, mode string) {
	t.Helper()
	r := corral(t, dir, nil, "run", "--", "bash", "-c", "command -v su >/dev/null || exit 7; command -v pkexec")
	switch r.code {
	case 1:
	case 7:
		t.Errorf("%s mode: command -v does not find su: the pkexec lookup proves nothing", mode)
	case 0:
		t.Errorf("%s mode: pkexec is installed in the box (%s): probe it for real", mode, strings.TrimSpace(r.stdout))
	default:
		t.Errorf("%s mode: the pkexec lookup did not run: exit %d: %s", mode, r.code, r.stderr)
	}
}

// provisionProbeScript is a repository provision script that tries the host's loopback through
// the gateway at every boot and appends "BOOT-ID tcp=open|closed" to the box user's
// ~/provision-probe.
const provisionProbeScript = `#!/bin/bash
if timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d'; then r=open; else r=closed; fi
echo "$(cat /proc/sys/kernel/random/boot_id) tcp=$r" >>"$HOME/provision-probe"
`

// addProvisionProbe commits provisionProbeScript (aimed at p) as dir's provision script and
// approves it, so that the box's first boot runs it.
func addProvisionProbe(t *testing.T, dir string, p *hostProbe) {
	t.Helper()
	writeFile(t, filepath.Join(dir, ".corral.toml"), "provision = [\"probe.sh\"]\n", 0o644)
	writeFile(t, filepath.Join(dir, "probe.sh"), fmt.Sprintf(provisionProbeScript, slirpGateway, p.port), 0o755)
	gitAsUser(t, dir, "add", "-A")
	gitAsUser(t, dir, "commit", "-qm", "provision probe")
	if r := corral(t, dir, nil, "review", "--approve"); r.code != 0 {
		t.Fatalf("review --approve: exit %d: %s", r.code, r.stderr)
	}
}

// provisionProbeRuns returns what the provision probe recorded, one "BOOT-ID tcp=…" per run,
// and the number of distinct boots it ran in.
func provisionProbeRuns(t *testing.T, dir string) ([]string, int) {
	t.Helper()
	r := corral(t, dir, nil, "run", "--", "bash", "-c", `cat "$HOME/provision-probe"`)
	lines := strings.Fields(strings.ReplaceAll(strings.TrimSpace(r.stdout), " tcp=", "/tcp="))
	boots := map[string]bool{}
	for _, l := range lines {
		id, _, _ := strings.Cut(l, "/")
		boots[id] = true
	}
	return lines, len(boots)
}

// provisionProbeSaw checks that every provision probe run so far saw want ("open" or "closed")
// in at least boots distinct boots.
func provisionProbeSaw(t *testing.T, dir, mode, want string, boots int) {
	t.Helper()
	runs, n := provisionProbeRuns(t, dir)
	if n < boots {
		t.Errorf("%s mode: the provision script ran in %d boots (%q), want %d: it did not run at every boot", mode, n, runs, boots)
	}
	for _, l := range runs {
		if !strings.HasSuffix(l, "/tcp="+want) {
			t.Errorf("%s mode: the provision script's network probe says %q, want tcp=%s", mode, l, want)
		}
	}
}

// TestLockdownControls is the control group of every lockdown probe: in a full box, where
// nothing blocks them, each way out lockdownHolds tries gets through and reaches its listener,
// the approved provision script's network probe gets through at boot, Lima's resolver address
// is answered (by the host agent), root's password is locked (why su fails in every box), the
// pkexec lookup works, and the guest agent probe sees an agent run as root where one is.
func TestLockdownControls(t *testing.T) {
	group(t)
	dir := newProject(t, "controls")
	box := boxName(t, dir)
	cleanupBox(t, box)
	probe := newHostProbe(t)
	addProvisionProbe(t, dir, probe)
	t.Run("run --yes boots a full box with the provision probe", func(t *testing.T) {
		if r := corral(t, dir, nil, "run", "--yes", "--", "true"); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
	})
	t.Run("the provision script's network probe got through at boot", func(t *testing.T) {
		provisionProbeSaw(t, dir, "full", "open", 1)
		if probe.tcp.Load() == 0 {
			t.Error("full mode: the provision probe's connection never reached the host's listener")
		}
	})
	t.Run("every way out a lockdown closes gets through a full box", func(t *testing.T) {
		for _, w := range waysOut(probe) {
			if !tryWayOut(t, dir, probe, w) {
				t.Errorf("control: %s did not get through a full box: the same probe refused in a locked box proves nothing", w.name)
			}
		}
	})
	t.Run("Lima's resolver address is answered by the host agent", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "bash", "-c", dnsAsk(0x4c49, "host.lima.internal", slirpDNS, 53))
		if !dnsAnswered(r.stdout, 0x4c49, net.ParseIP(slirpGateway)) {
			t.Errorf("a DNS query for host.lima.internal to %s:53 got %q, want the host agent's answer %s", slirpDNS, r.stdout, slirpGateway)
		}
	})
	t.Run("root's password is locked in the image: su fails for the box user in every mode", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "sudo", "-n", "passwd", "-S", "root")
		if f := strings.Fields(r.stdout); r.code != 0 || len(f) < 2 || f[1] != "L" {
			t.Errorf("passwd -S root: exit %d, %q: want status L (locked)", r.code, r.stdout)
		}
	})
	t.Run("the pkexec lookup works and finds no pkexec", func(t *testing.T) {
		pkexecAbsent(t, dir, "full")
	})
	t.Run("Lima's guest agent runs as the box user, and the probe sees an agent root starts as root", func(t *testing.T) {
		guestAgentNotRoot(t, dir, "full") // guestagent_test.go
		guestAgentControl(t, dir)
	})
}
