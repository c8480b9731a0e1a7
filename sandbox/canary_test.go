package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCanaryNamespace puts a listener in a network namespace of the test's own, reachable from
// the host through a veth pair (the control), and proves the sandbox cannot reach it.
func TestCanaryNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a network namespace and a veth pair needs root; TestHostile's loopback and DNS cases hold unprivileged")
	}
	f := newFixture(t)
	ns := fmt.Sprintf("corral-sbx-%d", os.Getpid())
	host, peer := fmt.Sprintf("csbx%dh", os.Getpid()%100000), fmt.Sprintf("csbx%dp", os.Getpid()%100000)
	octet := 16 + os.Getpid()%200
	hostIP, canaryIP := fmt.Sprintf("10.251.%d.1", octet), fmt.Sprintf("10.251.%d.2", octet)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() })
	ip("link", "set", peer, "netns", ns)
	ip("addr", "add", hostIP+"/30", "dev", host)
	ip("link", "set", host, "up")
	ip("-n", ns, "addr", "add", canaryIP+"/30", "dev", peer)
	ip("-n", ns, "link", "set", peer, "up")
	canary := canaryIP + ":8080"
	srv := exec.Command("ip", "netns", "exec", ns, f.self, "probe", "serve", canary)
	stdout, _ := srv.StdoutPipe()
	must(t, srv.Start())
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); !strings.Contains(line, "listening") {
		t.Fatalf("canary did not start: %q", line)
	}
	if code, out := f.direct(t, "connect", canary); code != 0 {
		t.Fatalf("control: the host cannot reach the canary: %s", out)
	}
	res, out := f.sandboxed(t, nil, "connect", canary)
	if res.Status != 3 {
		t.Errorf("the sandbox reached the canary in %s: status %d\n%s", ns, res.Status, out)
	}
	// Landlock's connect rule refuses it first; beneath it, the sandbox's namespace has no
	// route but loopback.
	if !strings.Contains(out, "permission denied") && !strings.Contains(out, "unreachable") {
		t.Errorf("refused for an unexpected reason: %s", out)
	}
}
