package e2e

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Guest ports of the editor forward probe (TestGuardsFullMode): the group's trusted file
// allows editorAllowedPort in `ports`, and nothing allows editorOtherPort.
const (
	editorAllowedPort = 8098
	editorOtherPort   = 8099
)

// editorForward runs "ssh -F sshConfig -L LOCAL:127.0.0.1:guestPort -N corral-BOX" as the
// test user, fetches http://127.0.0.1:LOCAL/ through it, and returns the answer ("" when the
// guest refused the forward) and ssh's stderr. ssh is ended by its PID.
func editorForward(t *testing.T, sshConfig, box string, guestPort int) (string, string) {
	t.Helper()
	local := freeLoopbackPort(t)
	cmd := asUser([]string{"ssh", "-F", sshConfig, "-o", "BatchMode=yes", "-N",
		"-L", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", local, guestPort), "corral-" + box})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("ssh -L: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	// ssh listens on LOCAL once the connection (boot, guard check, login) is up.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("ssh -L to guest port %d ended before it listened: %s", guestPort, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh -L to guest port %d never listened on %d: %s", guestPort, local, stderr.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	got, _ := httpGet(fmt.Sprintf("http://127.0.0.1:%d/", local))
	time.Sleep(500 * time.Millisecond) // ssh writes the channel's refusal after closing it
	return got, stderr.String()
}

// editorForwardProbe: an editor's ssh -L through ssh-config reaches a guest listener on the
// port `ports` allows (the control) and is refused, by the guest's sshd, for a listener on a
// port it does not.
func editorForwardProbe(t *testing.T, dir, sshConfig, box string) {
	t.Helper()
	r := corral(t, dir, nil, "run", "--", "sh", "-c", fmt.Sprintf("%s %d fwd-allowed-marker && %s %d fwd-other-marker; sleep 1; echo started",
		guestHTTP, editorAllowedPort, guestHTTP, editorOtherPort))
	if r.code != 0 || !strings.Contains(r.stdout, "started") {
		t.Fatalf("start the guest listeners: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// The other listener answers inside the box: a refusal below is the forward's, not a dead
	// listener's.
	r = corral(t, dir, nil, "run", "--", "perl", "-MIO::Socket::INET", "-e",
		fmt.Sprintf(`$c = IO::Socket::INET->new("127.0.0.1:%d") or die "connect: $!"; print $c "GET / HTTP/1.0\r\n\r\n"; print <$c>`, editorOtherPort))
	if !strings.Contains(r.stdout, "fwd-other-marker") {
		t.Fatalf("the guest listener on %d does not answer inside the box: exit %d, stdout %q, stderr %q", editorOtherPort, r.code, r.stdout, r.stderr)
	}
	if got, stderr := editorForward(t, sshConfig, box, editorAllowedPort); !strings.Contains(got, "fwd-allowed-marker") {
		t.Errorf("ssh -L to guest port %d, which ports allows: got %q, want the listener's answer; ssh said %q", editorAllowedPort, got, stderr)
	}
	got, stderr := editorForward(t, sshConfig, box, editorOtherPort)
	if strings.Contains(got, "fwd-other-marker") {
		t.Errorf("ssh -L to guest port %d, which ports does not allow, reached the listener: %q", editorOtherPort, got)
	}
	if !strings.Contains(stderr, "open failed") {
		t.Errorf("ssh -L to guest port %d: ssh did not report the refused channel: %q", editorOtherPort, stderr)
	}
}
