package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/vm"
)

// benchClone (CORRAL_BENCH_CLONE=1) times, on the clone group's running box, having a 50 MB
// repository checked out in the box two ways: what "git corral clone" does once the box runs
// (go-git fetch into a store on the host, then the bundle streamed over SSH and checked out by
// the box's git), and "git clone" inside the box from a git daemon on the host's 127.0.0.1,
// which the guest reaches as 192.168.5.2 (the only address the guest is sent to). Both run
// over the same SSH connection; medians of CORRAL_BENCH_RUNS (default 3) each, alternating. The fixed cost the
// command adds on a running box (process, box check, SSH, guard check) is timed separately as
// "git corral run -- true".
func benchClone(t *testing.T, base, box, guestDir string) {
	benchRuns := 3
	if n, err := strconv.Atoi(os.Getenv("CORRAL_BENCH_RUNS")); err == nil && n > 0 {
		benchRuns = n
	}
	big := filepath.Join(base, "big")
	sh(t, "git init -q -b main "+big+" && cd "+big+" && for i in $(seq 50); do head -c 1048576 /dev/urandom > f$i; done && git add -A && git commit -qm big && du -sm .git")
	port := gitDaemon(t, base)

	ep, err := vm.EndpointFromSSHConfig(filepath.Join(suite.home, "lima", box, "ssh.config"), "lima-"+box)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := vm.Dial(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	guest := &benchGuest{c: c}
	home := filepath.Dir(filepath.Dir(guestDir))
	var corralT, gitT []time.Duration
	for i := range benchRuns {
		store := filepath.Join(t.TempDir(), "big.git")
		dir := fmt.Sprintf("%s/bench/corral-%d", home, i)
		t0 := time.Now()
		if _, err := clone.Fetch(ctx, big, store, clone.Options{}); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if err := clone.Deliver(ctx, guest, store, clone.DeliverOptions{Dir: dir, Branch: "main"}); err != nil {
			t.Fatalf("deliver: %v", err)
		}
		corralT = append(corralT, time.Since(t0))
		dir = fmt.Sprintf("%s/bench/git-%d", home, i)
		t0 = time.Now()
		if out, code, err := c.Output(ctx, []string{"git", "clone", "-q", fmt.Sprintf("git://192.168.5.2:%d/big", port), dir}); err != nil || code != 0 {
			t.Fatalf("git clone in the box: exit %d: %v: %s", code, err, out)
		}
		gitT = append(gitT, time.Since(t0))
		if out, code, _ := c.Output(ctx, []string{"sh", "-c", `cmp -s "$1/f7" "$2/f7" && du -sm "$1" && rm -rf "$1" "$2"`, "x",
			fmt.Sprintf("%s/bench/corral-%d", home, i), dir}); code != 0 {
			t.Fatalf("the two checkouts differ (exit %d): %s", code, out)
		}
	}
	var fixed []time.Duration
	for range benchRuns {
		r := corral(t, filepath.Join(base, "dest"), nil, "run", "--", "true")
		fixed = append(fixed, r.took)
	}
	line := fmt.Sprintf("clone 50 MB: git corral clone path median %s %v; git clone in box median %s %v; git corral run -- true median %s %v",
		median(corralT), corralT, median(gitT), gitT, median(fixed), fixed)
	t.Log(line)
	_ = os.WriteFile(filepath.Join(e2eBase, "bench-clone.txt"), []byte(line+"\n"), 0o644)
}

// benchGuest is the SSH client as a clone.Guest, as cmd/git-corral adapts it.
type benchGuest struct{ c *vm.Client }

func (g *benchGuest) Exec(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (int, error) {
	var stderr strings.Builder
	code, err := g.c.Run(ctx, vm.SessionOptions{Argv: argv, Stdin: stdin, Stdout: stdout, Stderr: &stderr})
	var es vm.ExitStatus
	if errors.As(err, &es) {
		return code, nil
	}
	return code, err
}

// gitDaemon serves every repository under base with git daemon, as the test user, on a free
// port of the host's 127.0.0.1 (the guest reaches it as 192.168.5.2), until the test ends, and
// returns the port once it accepts connections.
func gitDaemon(t *testing.T, base string) int {
	t.Helper()
	port := freePort(t)
	daemon := asUser([]string{"git", "daemon", "--reuseaddr", "--export-all", "--base-path=" + base,
		"--listen=127.0.0.1", "--port=" + strconv.Itoa(port), base})
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // runuser's child, git daemon, ends with it
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-daemon.Process.Pid, syscall.SIGKILL); _ = daemon.Wait() })
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return port
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("git daemon on port %d does not accept connections", port)
	return 0
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(10 * time.Millisecond)
}
