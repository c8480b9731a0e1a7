package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freeLoopbackPort returns a port nothing listens on at 127.0.0.1 right now.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpGet fetches url once with a short timeout; "" and the error when nothing answers.
func httpGet(url string) (string, error) {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// waitHTTP polls url until it answers with want or d passes.
func waitHTTP(url, want string, d time.Duration) (string, error) {
	deadline := time.Now().Add(d)
	for {
		got, err := httpGet(url)
		if err == nil && strings.Contains(got, want) || time.Now().After(deadline) {
			return got, err
		}
		time.Sleep(time.Second)
	}
}

// TestKeysMountsPorts is the mounts and ports group (issue #20) on one full-network box whose
// trusted per-project file mounts a host directory at /srv/data (read-only by default) and
// forwards a free host port to guest port 8080: the mount is readable and not writable (the
// control: the project is writable); a listener on 8080 answers on the host's 127.0.0.1 and
// only there, one on 8081 does not (the control: the same client reaches 8080); a sensitive
// entry is refused before anything boots, naming the entry; a changed ports entry on the
// existing box is refused with the fix.
func TestKeysMountsPorts(t *testing.T) {
	group(t)
	dir := newProject(t, "keysmounts")
	box := boxName(t, dir)
	cleanupBox(t, box)
	data := cloneCase(t, "keysmounts-data")
	writeFile(t, filepath.Join(data, "hello.txt"), "from-the-host\n", 0o644)
	hostPort := freeLoopbackPort(t)
	config := fmt.Sprintf("mounts = [%q]\nports = [\"%d:8080\"]\n", data+":/srv/data", hostPort)
	writeProjectConfig(t, box, config)

	t.Run("a sensitive mount is refused before anything boots, naming the entry", func(t *testing.T) {
		writeProjectConfig(t, box, "mounts = [\"~/.ssh:/srv/x\"]\n")
		if err := os.MkdirAll(filepath.Join(suite.home, ".ssh"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := chown(filepath.Join(suite.home, ".ssh")); err != nil {
			t.Fatal(err)
		}
		r := corral(t, dir, nil, "run", "--yes", "--", "true")
		if r.code != 1 || !strings.Contains(r.stderr, `"~/.ssh:/srv/x"`) || !strings.Contains(r.stderr, "refuse to mount") {
			t.Errorf("exit %d, stderr %q: want 1 and a refusal naming \"~/.ssh:/srv/x\"", r.code, r.stderr)
		}
		if out, _ := limactl("list", "--format", "{{.Name}}"); strings.Contains(out, box) {
			t.Errorf("box %s was created for a refused mount", box)
		}
		writeProjectConfig(t, box, config)
	})

	t.Run("the extra mount is readable and read-only; the project is writable", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--yes", "--", "sh", "-c",
			`cat /srv/data/hello.txt; if touch /srv/data/new 2>/dev/null; then echo MOUNT-WRITABLE; else echo mount-read-only; fi; `+
				`touch ./written-by-box && echo project-writable`)
		if r.code != 0 || !strings.Contains(r.stdout, "from-the-host") {
			t.Fatalf("exit %d, stdout %q: /srv/data/hello.txt is not readable in the box", r.code, r.stdout)
		}
		if !strings.Contains(r.stdout, "project-writable") {
			t.Fatalf("control: the project is not writable from the box: %q", r.stdout)
		}
		if !strings.Contains(r.stdout, "mount-read-only") {
			t.Errorf("the read-only mount took a write: %q", r.stdout)
		}
		if _, err := os.Stat(filepath.Join(data, "new")); err == nil {
			t.Error("the box created a file in the read-only host directory")
		}
	})

	t.Run("the forwarded port answers on the host's 127.0.0.1; another guest port does not", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "sh", "-c",
			guestHTTP+` 8080 port-8080-marker && `+guestHTTP+` 8081 port-8081-marker; sleep 1; echo started`)
		if r.code != 0 || !strings.Contains(r.stdout, "started") {
			t.Fatalf("start the guest listeners: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		url := "http://127.0.0.1:" + strconv.Itoa(hostPort) + "/m"
		if got, err := waitHTTP(url, "port-8080-marker", 60*time.Second); !strings.Contains(got, "port-8080-marker") {
			t.Fatalf("control: %s = %q, %v: the forwarded port does not answer", url, got, err)
		}
		if got, _ := httpGet("http://127.0.0.1:8081/m"); strings.Contains(got, "port-8081-marker") {
			t.Errorf("guest port 8081, which ports does not name, answers on the host: %q", got)
		}
		r = corral(t, dir, nil, "run", "--", "bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/8081 && printf 'GET /m HTTP/1.0\r\n\r\n' >&3 && cat <&3`)
		if !strings.Contains(r.stdout, "port-8081-marker") {
			t.Errorf("control: the 8081 listener does not answer inside the box: %q %q", r.stdout, r.stderr)
		}
		out, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			t.Fatal(err)
		}
		hex := fmt.Sprintf(":%04X ", hostPort)
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 3 && strings.HasSuffix(f[1], hex[:len(hex)-1]) && f[3] == "0A" && !strings.HasPrefix(f[1], "0100007F:") {
				t.Errorf("host port %d listens on %s, not 127.0.0.1", hostPort, f[1])
			}
		}
		r = corral(t, dir, nil, "ports")
		if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("127.0.0.1:%d -> box %s port 8080", hostPort, box)) {
			t.Errorf("git corral ports: exit %d, stdout %q", r.code, r.stdout)
		}
	})

	t.Run("a changed ports entry on the existing box is refused with the fix", func(t *testing.T) {
		writeProjectConfig(t, box, fmt.Sprintf("mounts = [%q]\nports = [\"%d:8081\"]\n", data+":/srv/data", hostPort))
		r := corral(t, dir, nil, "run", "--", "true")
		if r.code != 1 || !strings.Contains(r.stderr, "other mounts or ports") || !strings.Contains(r.stderr, "delete") {
			t.Errorf("exit %d, stderr %q: want a refusal of the stale box with the delete hint", r.code, r.stderr)
		}
		writeProjectConfig(t, box, config)
		if r := corral(t, dir, nil, "run", "--", "true"); r.code != 0 {
			t.Errorf("control: the restored configuration: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// guestHTTP starts, detached, a one-line HTTP server in the box (the image has perl-base, not
// python3): guestHTTP+" PORT BODY" answers every request on 0.0.0.0:PORT with BODY.
const guestHTTP = `setsid -f perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "0.0.0.0", LocalPort => $ARGV[0], Listen => 5, ReuseAddr => 1) or die "listen: $!"; while ($c = $s->accept) { <$c>; print $c "HTTP/1.0 200 OK\r\n\r\n$ARGV[1]\n"; close $c }' >/dev/null 2>&1`
