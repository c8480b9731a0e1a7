package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// inheritedScript is the command of TestInheritedDescriptors: it lists its descriptors, reads
// descriptors 9 and 200 and writes to 201, each line saying what it got.
const inheritedScript = `printf 'fds:'; for f in /proc/self/fd/*; do printf ' %s' "${f##*/}"; done; echo
for n in 9 200; do if read -r l <&$n; then echo "fd $n read: $l"; else echo "fd $n: closed"; fi; done
if echo leaked >&201; then echo "fd 201 written"; else echo "fd 201: closed"; fi`

// TestInheritedDescriptors: descriptors the caller left open without close-on-exec (as a shell
// leaves '9<~/.ssh/key'), a file on 9 and on 200 and a connected socket on 201, reach a command
// that this process starts (the control) but never a command Run starts: it has only the three
// standard streams (and the directory its own listing opens), a read of 9 and 200 fails and
// nothing arrives on the socket. The sandbox still reads the same secret through an fs.read
// grant (a second control).
func TestInheritedDescriptors(t *testing.T) {
	f := newFixture(t)
	secret := f.home + "/.ssh/id_ed25519"
	bash, err := exec.LookPath("bash")
	must(t, err)
	bash, _ = filepath.EvalSymlinks(bash)
	argv := []string{bash, "-c", inheritedScript}

	peer := leak(t, secret)
	out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	for _, want := range []string{"fd 9 read: PRIVATE KEY", "fd 200 read: PRIVATE KEY", "fd 201 written"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("control (started here): %q missing, so the test does not leave the descriptors open:\n%s", want, out)
		}
	}
	if got := received(peer); got != "leaked" {
		t.Fatalf("control: the socket's peer got %q, want \"leaked\"", got)
	}

	peer = leak(t, secret)
	res, sout := f.run(t, &Manifest{}, argv)
	if strings.Contains(sout, "PRIVATE KEY") || !strings.Contains(sout, "fd 9: closed") || !strings.Contains(sout, "fd 200: closed") || !strings.Contains(sout, "fd 201: closed") {
		t.Errorf("in the sandbox (status %d) an inherited descriptor was usable:\n%s", res.Status, sout)
	}
	if !strings.Contains(sout, "fds: 0 1 2 3\n") {
		t.Errorf("in the sandbox the command has descriptors beyond 0, 1, 2 and its listing's 3:\n%s", sout)
	}
	if got := received(peer); got != "" {
		t.Errorf("in the sandbox the socket's peer got %q, want nothing", got)
	}

	res, sout = f.run(t, &Manifest{Read: []string{secret}}, []string{bash, "-c", "read -r l <" + secret + " && echo \"granted: $l\""})
	if res.Status != 0 || !strings.Contains(sout, "granted: PRIVATE KEY") {
		t.Errorf("control (fs.read grant): status %d:\n%s", res.Status, sout)
	}
}

// leak opens secret on descriptors 9 and 200 and one end of a connected socket pair on 201,
// none close-on-exec, as a shell's redirections leave them; it returns the socket's other end.
func leak(t *testing.T, secret string) *os.File {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	// Each its own open file (a shared offset would let the first read take the second's
	// line), moved above the numbers dup'ed to below (dup3 refuses a descriptor onto itself).
	above := func(fd int, err error) int {
		t.Helper()
		must(t, err)
		high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 300)
		must(t, err)
		unix.Close(fd)
		return high
	}
	open := func() int { return above(unix.Open(secret, unix.O_RDONLY|unix.O_CLOEXEC, 0)) }
	pair[0] = above(pair[0], nil)
	for n, from := range map[int]int{9: open(), 200: open(), 201: pair[0]} {
		must(t, unix.Dup3(from, n, 0))
		unix.Close(from)
		t.Cleanup(func() { unix.Close(n) })
	}
	must(t, unix.SetNonblock(pair[1], true)) // so that the read below can time out
	peer := os.NewFile(uintptr(pair[1]), "peer")
	t.Cleanup(func() { peer.Close() })
	return peer
}

// received returns what arrived on peer within a moment, once descriptor 201 is closed here.
func received(peer *os.File) string {
	unix.Close(201)
	peer.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var b bytes.Buffer
	buf := make([]byte, 64)
	for {
		n, err := peer.Read(buf)
		b.Write(buf[:n])
		if err != nil || n == 0 {
			return strings.TrimSpace(b.String())
		}
	}
}
