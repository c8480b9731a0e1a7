package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptCreate is the interrupted-creation group: git corral is interrupted while it
// creates a box from scratch (--no-golden: a first boot of a minute or more, so the signal lands
// in the middle of it), and no half box is left to boot without the guards' bookkeeping.
//   - SIGINT while Lima copies the image or boots: git corral removes the half box itself and
//     says so; limactl list shows no instance, and no metadata is left.
//   - SIGKILL while the box boots (nothing can be caught): the half box is left marked
//     "creating"; the next run says it removes it, then creates the box cleanly (one instance,
//     running, its metadata no longer "creating").
func TestInterruptCreate(t *testing.T) {
	group(t)
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		phase string // the instance file whose existence starts the signal's countdown
	}{
		{"SIGINT while the image is copied or the box boots", syscall.SIGINT, "lima.yaml"},
		{"SIGTERM while the box boots", syscall.SIGTERM, "qemu.pid"},
		{"SIGKILL while the box boots", syscall.SIGKILL, "qemu.pid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := newProject(t, "interrupt")
			box := boxName(t, dir)
			cleanupBox(t, box)
			cmd := asUser([]string{suite.bin, "-C", dir, "run", "--yes", "--no-golden", "--", "true"})
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			if !waitFor(filepath.Join(suite.home, "lima", box, c.phase), done, 5*time.Minute) {
				t.Fatalf("the creation never reached %s (or ended first): %s", c.phase, out.String())
			}
			if state := metaState(t, box); state != "creating" {
				t.Errorf("while the box is made its metadata state is %q, want creating", state)
			}
			time.Sleep(2 * time.Second)
			pid := corralPID(t, cmd.Process.Pid)
			if err := syscall.Kill(pid, c.sig); err != nil {
				t.Fatalf("signal git corral %d: %v", pid, err)
			}
			select {
			case <-done:
			case <-time.After(3 * time.Minute):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("git corral did not exit within 3 minutes of %v: %s", c.sig, out.String())
			}
			t.Logf("interrupted git corral said: %s", out.String())
			if cmd.ProcessState.ExitCode() == 0 {
				t.Errorf("the interrupted run exited 0")
			}
			if c.sig != syscall.SIGKILL {
				if !strings.Contains(out.String(), "half-created box was removed") {
					t.Errorf("the interrupted run did not say it removed the half box: %s", out.String())
				}
				if n := instances(t, box); len(n) != 0 || metaState(t, box) != "none" {
					t.Errorf("after %v: instances %q, metadata %q: want nothing left", c.sig, n, metaState(t, box))
				}
				return
			}
			if n := instances(t, box); len(n) != 1 || metaState(t, box) != "creating" {
				t.Fatalf("after SIGKILL: instances %q, metadata %q: want the half box, marked creating", n, metaState(t, box))
			}
			r := corral(t, dir, nil, "run", "--yes", "--", "true")
			if r.code != 0 || !strings.Contains(r.stderr, "half-created") {
				t.Fatalf("the next run: exit %d, stderr %q: want 0, saying it removed the half box", r.code, r.stderr)
			}
			if n := instances(t, box); len(n) != 1 || !strings.HasSuffix(n[0], " Running") || metaState(t, box) != "ready" {
				t.Errorf("after the next run: instances %q, metadata %q: want one running box, ready", n, metaState(t, box))
			}
		})
	}
}

// waitFor waits until path exists, or the command ends (done), or timeout.
func waitFor(path string, done chan error, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		select {
		case err := <-done:
			done <- err
			return false
		default:
		}
	}
	return false
}

// corralPID is the git corral process started as parent (itself, or runuser's child when the
// suite runs as root: runuser does not pass every signal on).
func corralPID(t *testing.T, parent int) int {
	t.Helper()
	if !suite.asRoot {
		return parent
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range stats {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			if i < 0 || !strings.Contains(s[:i], "(git-corral") {
				continue
			}
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(parent) {
				pid, _ := strconv.Atoi(strings.Fields(s)[0])
				return pid
			}
		}
	}
	t.Fatalf("no git-corral child of runuser %d", parent)
	return 0
}

// instances lists the Lima instances named box ("NAME STATUS").
func instances(t *testing.T, box string) []string {
	t.Helper()
	out, err := limactl("list", "--format", "{{.Name}} {{.Status}}")
	if err != nil {
		t.Fatalf("limactl list: %v: %s", err, out)
	}
	var n []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, box+" ") {
			n = append(n, l)
		}
	}
	return n
}

// metaState is box's metadata state: "none" without metadata, "ready" when creation finished.
func metaState(t *testing.T, box string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suite.home, "boxes", box+".json"))
	if err != nil {
		return "none"
	}
	var m struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("box metadata: %v: %s", err, b)
	}
	if m.State == "" {
		return "ready"
	}
	return m.State
}
