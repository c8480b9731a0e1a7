package e2e

import (
	"strings"
	"testing"
)

// Lima's guest agent runs as root in every box. The dropped sudo of a locked box rests on the
// box user reaching no root daemon, so the box user must not be able to talk to the agent on any
// transport it may use: its Unix socket (where it listens without a virtio or vsock port; the
// pinned Lima makes that socket world-writable), the virtio-serial ports (QEMU) and vsock (vz;
// reachable from inside the guest through the loopback transport).

// guestAgentProbe prints one line per way into the guest agent: "agent PID ARGV" for each running
// agent, then "KIND TARGET RESULT" for its Unix socket (and each path given as an argument),
// every virtio port and vsock to the agent's port (2222, vz's, when it serves on none) on the
// local and the host CID; RESULT is OK or the errno's name.
const guestAgentProbe = `
import errno, glob, os, socket, sys
def res(f):
    try:
        f()
        return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def unix(p):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.settimeout(3)
        s.connect(p)
    finally:
        s.close()
def dev(p):
    os.close(os.open(p, os.O_RDWR | os.O_NONBLOCK | os.O_NOCTTY))
def vsock(cid, port):
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    try:
        s.settimeout(3)
        s.connect((cid, port))
    finally:
        s.close()
port = 0
for c in glob.glob("/proc/[0-9]*/comm"):
    try:
        if open(c).read().strip() != "lima-guestagent":
            continue
        argv = open(c[:-4] + "cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    print("agent", c.split("/")[2], " ".join(a.decode() for a in argv if a))
    for i, a in enumerate(argv[:-1]):
        if a == b"--vsock-port" and argv[i + 1].isdigit() and int(argv[i + 1]) > 0:
            port = int(argv[i + 1])
for p in ["/run/lima-guestagent.sock"] + sys.argv[1:]:
    print("unix", p, res(lambda: unix(p)))
for p in sorted(set(glob.glob("/dev/virtio-ports/*") + glob.glob("/dev/vport*"))):
    print("virtio", p, res(lambda: dev(p)))
for cid in (1, 2):
    print("vsock", "%d:%d" % (cid, port or 2222), res(lambda: vsock(cid, port or 2222)))
`

// agentWay is one line of guestAgentProbe's output.
type agentWay struct{ kind, target, result string }

// probeGuestAgent runs guestAgentProbe in dir's box, as root through sudo when root is set,
// with extra Unix socket paths to try; it returns the agents' lines and the ways.
func probeGuestAgent(t *testing.T, dir string, root bool, extra ...string) ([]string, []agentWay) {
	t.Helper()
	argv := []string{"run", "--timeout", "60s", "--"}
	if root {
		argv = append(argv, "sudo", "-n")
	}
	argv = append(argv, "python3", "-c", guestAgentProbe)
	r := corral(t, dir, nil, append(argv, extra...)...)
	if r.code != 0 {
		t.Fatalf("the guest agent probe did not run (root=%v): exit %d: %s", root, r.code, r.stderr)
	}
	var agents []string
	var ways []agentWay
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "agent":
			agents = append(agents, l)
		case len(f) == 3:
			ways = append(ways, agentWay{f[0], f[1], f[2]})
		default:
			t.Fatalf("guest agent probe: unexpected line %q in %q", l, r.stdout)
		}
	}
	t.Logf("guest agent probe (root=%v): agents %q, ways %+v", root, agents, ways)
	return agents, ways
}

// guestAgentUnreachable: in mode's box the box user opens no way into the guest agent. The
// agent must be running (else there is nothing to reach and the probe proves nothing) and QEMU's
// virtio port must be there, refused by its permission (EACCES) rather than because another
// opener holds it (EBUSY means the permission check passed).
func guestAgentUnreachable(t *testing.T, dir, mode string) {
	t.Helper()
	agents, ways := probeGuestAgent(t, dir, false)
	if len(agents) == 0 {
		t.Errorf("%s mode: the probe finds no lima-guestagent process: it proves nothing", mode)
	}
	virtio := 0
	for _, w := range ways {
		if w.result == "OK" {
			t.Errorf("%s mode: the box user reached Lima's guest agent (root) through %s %s", mode, w.kind, w.target)
		}
		if w.kind == "virtio" {
			virtio++
			if w.result != "EACCES" && w.result != "EPERM" {
				t.Errorf("%s mode: opening %s as the box user gave %s, want EACCES (refused by its permission)", mode, w.target, w.result)
			}
		}
	}
	if virtio == 0 {
		t.Errorf("%s mode: the probe finds no virtio port: the guest agent's QEMU channel was not probed", mode)
	}
}

// guestAgentControl is the control in a full box, where sudo is left to the box user: root gets
// past the virtio port's permission (the agent holds the port, so EBUSY, or OK), and the box
// user's probe does reach a Unix socket that lets it (one root listens on, mode 0666): the same
// probe that reports the ways closed in a locked box reports a way open when one is.
func guestAgentControl(t *testing.T, dir string) {
	t.Helper()
	_, ways := probeGuestAgent(t, dir, true)
	virtio := 0
	for _, w := range ways {
		if w.kind == "virtio" {
			virtio++
			if w.result != "OK" && w.result != "EBUSY" {
				t.Errorf("control: root opening %s gave %s, want OK or EBUSY (past the permission)", w.target, w.result)
			}
		}
	}
	if virtio == 0 {
		t.Error("control: root finds no virtio port in a full box")
	}
	const sock = "/run/corral-e2e-agent-control.sock"
	listen := `import os, socket, time; s = socket.socket(socket.AF_UNIX); s.bind("` + sock + `"); os.chmod("` + sock + `", 0o666); s.listen(4); time.sleep(15)`
	r := corral(t, dir, nil, "run", "--timeout", "60s", "--", "bash", "-c",
		`sudo -n rm -f `+sock+`; sudo -n python3 -c '`+listen+`' & for i in $(seq 50); do [ -S `+sock+` ] && break; sleep 0.1; done; python3 -c "$1" `+sock+`; sudo -n rm -f `+sock, "probe", guestAgentProbe)
	if !strings.Contains(r.stdout, "unix "+sock+" OK") {
		t.Errorf("control: the box user's probe of a root socket open to all says %q (exit %d, %s), want OK", r.stdout, r.code, r.stderr)
	}
}
