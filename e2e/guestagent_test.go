package e2e

import (
	"strings"
	"testing"
)

// Lima's guest agent listens on a Unix socket every local user can write (the pinned Lima makes
// it world-writable, and Lima's host agent reaches it over SSH as the box user) and dials any
// address it is asked to. Run as root, as Lima runs it, it handed the box user root's
// connections; the dropped sudo of a locked box rests on the box user reaching no root daemon.
// git corral runs it as the box user ("root" only in a user namespace of its own:
// provision/guest/guestagent-ns.sh), and the guard check fails a box where it runs as root.

// guestAgentProbe prints "me UID USERNS", then "agent PID REAL EFF USERNS" for each process
// named lima-guestagent (its real and effective uid as the box sees them and its user
// namespace), then "KIND TARGET RESULT" for the agent's socket, every virtio port and vsock to
// the agent's port (2222, vz's, when it serves on none) on the local and the host CID; RESULT is
// OK or the errno's name.
const guestAgentProbe = `
import errno, glob, os, socket
def res(f):
    try:
        f()
        return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def userns(pid):
    try:
        return os.readlink("/proc/%s/ns/user" % pid).replace(" ", "")
    except OSError as e:
        return "unreadable:" + errno.errorcode.get(e.errno, str(e.errno))
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
print("me", os.getuid(), userns("self"))
port = 0
for c in glob.glob("/proc/[0-9]*/comm"):
    pid = c.split("/")[2]
    try:
        if open(c).read().strip() != "lima-guestagent":
            continue
        uid = [l.split()[1:3] for l in open("/proc/%s/status" % pid) if l.startswith("Uid:")][0]
        argv = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
    except (OSError, IndexError):
        continue
    print("agent", pid, uid[0], uid[1], userns(pid))
    for i, a in enumerate(argv[:-1]):
        if a == b"--vsock-port" and argv[i + 1].isdigit() and int(argv[i + 1]) > 0:
            port = int(argv[i + 1])
print("unix /run/lima-guestagent.sock", res(lambda: unix("/run/lima-guestagent.sock")))
for p in sorted(set(glob.glob("/dev/virtio-ports/*") + glob.glob("/dev/vport*"))):
    print("virtio", p, res(lambda: dev(p)))
for cid in (1, 2):
    print("vsock", "%d:%d" % (cid, port or 2222), res(lambda: vsock(cid, port or 2222)))
`

// agentProbe is guestAgentProbe's output.
type agentProbe struct {
	uid, userns string
	agents      [][4]string // pid, real uid, effective uid, user namespace
	ways        [][3]string // kind, target, result
}

// probeGuestAgent runs guestAgentProbe in dir's box as the box user, after prep (a shell
// command, "" for none).
func probeGuestAgent(t *testing.T, dir, prep string) agentProbe {
	t.Helper()
	r := corral(t, dir, nil, "run", "--timeout", "60s", "--", "bash", "-c", prep+"\npython3 -c \"$1\"", "probe", guestAgentProbe)
	if r.code != 0 {
		t.Fatalf("the guest agent probe did not run: exit %d: %s", r.code, r.stderr)
	}
	var p agentProbe
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "me":
			p.uid, p.userns = f[1], f[2]
		case len(f) == 5 && f[0] == "agent":
			p.agents = append(p.agents, [4]string{f[1], f[2], f[3], f[4]})
		case len(f) == 3:
			p.ways = append(p.ways, [3]string{f[0], f[1], f[2]})
		default:
			t.Fatalf("guest agent probe: unexpected line %q in %q", l, r.stdout)
		}
	}
	if p.uid == "" {
		t.Fatalf("guest agent probe printed no 'me' line: %q", r.stdout)
	}
	t.Logf("guest agent probe: %+v", p)
	return p
}

// rootAgents returns the agents the probe saw running as root (real or effective uid 0).
func (p agentProbe) rootAgents() []string {
	var out []string
	for _, a := range p.agents {
		if a[1] == "0" || a[2] == "0" {
			out = append(out, a[0])
		}
	}
	return out
}

// guestAgentNotRoot: in mode's box the box user reaches no root daemon of Lima's. The guest agent
// runs (else the probe proves nothing), as the box user and in a user namespace of its own, so
// its socket, which the box user can open, leads to nothing the box user could not do itself; no
// virtio port opens and vsock reaches nothing.
func guestAgentNotRoot(t *testing.T, dir, mode string) {
	t.Helper()
	p := probeGuestAgent(t, dir, "")
	if len(p.agents) == 0 {
		t.Errorf("%s mode: the probe finds no lima-guestagent process: it proves nothing", mode)
	}
	for _, a := range p.agents {
		if a[1] != p.uid || a[2] != p.uid {
			t.Errorf("%s mode: Lima's guest agent (pid %s) runs as uid %s/%s, not as the box user (%s)", mode, a[0], a[1], a[2], p.uid)
		}
		if a[3] == p.userns {
			t.Errorf("%s mode: Lima's guest agent (pid %s) is in the box user's own user namespace %s, not one of its own", mode, a[0], a[3])
		}
	}
	for _, w := range p.ways {
		if w[0] != "unix" && w[2] == "OK" {
			t.Errorf("%s mode: the box user opened %s %s", mode, w[0], w[1])
		}
	}
}

// guestAgentControl is the control in a full box, where the box user keeps sudo: root starts a
// process named lima-guestagent as root, and the same probe sees it as root, beside the real
// agent it sees as the box user: a probe that saw every agent as the box user could prove
// nothing.
func guestAgentControl(t *testing.T, dir string) {
	t.Helper()
	p := probeGuestAgent(t, dir, `sudo -n ln -sf /usr/bin/python3 /run/lima-guestagent
sudo -n /run/lima-guestagent -c 'import time; time.sleep(20)' daemon </dev/null >/dev/null 2>&1 &
sleep 1`)
	if len(p.rootAgents()) == 0 {
		t.Errorf("control: the probe saw no agent as root after root started one: %+v", p)
	}
	if len(p.agents) < 2 {
		t.Errorf("control: the probe saw %d agents, want Lima's and root's: %+v", len(p.agents), p)
	}
	for _, a := range p.agents {
		if a[1] == p.uid && a[3] == p.userns {
			t.Errorf("control: an agent (pid %s) runs as the box user in its user namespace: %+v", a[0], p)
		}
	}
}
