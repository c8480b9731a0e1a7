package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// TestMain answers, as the installed git-corral would, the two processes the watcher tests
// start from this test binary: "--box BOX watch" (what StartWatcher runs, detached) and a
// session ("session BOX IDLE STOPONEXIT HOLD WATCH": BeforeSession's marker and, when WATCH
// is "watch", StartWatcher; then the session lives for HOLD, or until it is killed when HOLD
// is "forever").
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "--box" && os.Args[3] == "watch" {
		os.Exit(watchMain(os.Args[2]))
	}
	if len(os.Args) == 7 && os.Args[1] == "session" {
		os.Exit(sessionMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// testManager is the box manager of the test's $CORRAL_HOME and fake limactl.
func testManager() *vm.Manager {
	return &vm.Manager{Limactl: os.Getenv("CORRAL_LIMACTL"), Home: home.Home{Dir: os.Getenv("CORRAL_HOME")}}
}

func watchMain(box string) int {
	poll, _ := time.ParseDuration(os.Getenv("CORRAL_TEST_WATCH_POLL"))
	r, err := Watch(context.Background(), testManager(), box, poll)
	fmt.Printf("watch %s: stopped=%t: %s: %v\n", box, r.Stopped, r.Reason, err)
	return 0
}

// sessionMain loads the box's configuration as a session does (policy.Load: the per-project
// file watchEnv.session wrote holds idle_stop and stop_on_exit) and checks it says what the
// command line says the test asked for.
func sessionMain(args []string) int {
	m := testManager()
	eff, err := policy.Load(context.Background(), policy.LoadOptions{Home: m.Home, Box: args[0]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := eff.Config
	if idle, _ := time.ParseDuration(args[1]); cfg.IdleStop != idle || strconv.FormatBool(cfg.StopOnExit) != args[2] {
		fmt.Fprintf(os.Stderr, "loaded idle_stop %s, stop_on_exit %t; the test asked for %s, %s\n", cfg.IdleStop, cfg.StopOnExit, args[1], args[2])
		return 1
	}
	if _, err := m.BeginSessionLimits(context.Background(), args[0], cfg.IdleStop, cfg.StopOnExit); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if args[4] == "watch" {
		if err := StartWatcher(m.Home, args[0], cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println("session")
	if args[3] == "forever" {
		select {}
	}
	hold, _ := time.ParseDuration(args[3])
	time.Sleep(hold)
	return 0
}

// watchEnv is a $CORRAL_HOME with one running box (a Lima instance whose host agent and QEMU
// pid files name a real process), and a fake limactl whose "stop" kills that process and
// removes the pid files, as Lima's stop does, and records the call.
type watchEnv struct {
	t     *testing.T
	h     home.Home
	box   string
	calls string
	env   []string
	// noWatcher makes sessions start no watcher (the test runs one itself).
	noWatcher bool
}

func newWatchEnv(t *testing.T) *watchEnv {
	t.Helper()
	h := home.Home{Dir: t.TempDir()}
	w := &watchEnv{t: t, h: h, box: "proj-abc123", calls: filepath.Join(h.Dir, "limactl.calls")}
	t.Cleanup(w.waitWatchers) // after the sessions and the stand-in VM end, before TempDir's removal
	t.Setenv("LIMA_HOME", h.LimaHome())
	inst := filepath.Join(h.LimaHome(), w.box)
	must(t, os.MkdirAll(inst, 0o700))
	must(t, os.WriteFile(filepath.Join(inst, "lima.yaml"), []byte("vmType: qemu\nimages: [{location: /x, arch: x86_64}]\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(inst, "ssh.config"), []byte("Host lima-"+w.box+"\n"), 0o600))
	w.boot()
	limactl := filepath.Join(h.Dir, "limactl")
	script := "#!/bin/sh\necho \"$*\" >> " + w.calls + "\n[ \"$2\" = stop ] || exit 1\nsleep \"${FAKE_STOP_SLEEP:-0}\"\n" +
		"d=\"$LIMA_HOME/$3\"\nkill \"$(cat \"$d/ha.pid\")\"\nrm -f \"$d/ha.pid\" \"$d/qemu.pid\"\necho \"stopped $3\" >> " + w.calls + "\n"
	must(t, os.WriteFile(limactl, []byte(script), 0o755))
	w.env = append(os.Environ(), "CORRAL_HOME="+h.Dir, "CORRAL_LIMACTL="+limactl, "LIMA_HOME="+h.LimaHome(), "CORRAL_TEST_WATCH_POLL=100ms")
	if !w.running() {
		t.Fatal("the stand-in box is not seen as running")
	}
	return w
}

// waitWatchers waits (up to 15 s) until no watcher holds the box's watch lock: a detached
// watcher outlives the test's processes by a poll or two, and must not write into a removed
// directory.
func (w *watchEnv) waitWatchers() {
	f, err := os.Open(filepath.Join(w.h.Boxes(), w.box+".watch"))
	if err != nil {
		return
	}
	defer f.Close()
	for start := time.Now(); time.Since(start) < 15*time.Second; time.Sleep(50 * time.Millisecond) {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			time.Sleep(200 * time.Millisecond) // its last line of output
			return
		}
	}
	w.t.Errorf("a watcher of %s still runs 15s after the test", w.box)
}

// boot makes the stand-in box run: a real process named by its host agent and QEMU pid files,
// as Lima's start leaves them.
func (w *watchEnv) boot() {
	w.t.Helper()
	vmProc := exec.Command("sleep", "600")
	must(w.t, vmProc.Start())
	go vmProc.Wait() // reaped when the fake limactl kills it
	w.t.Cleanup(func() { _ = vmProc.Process.Kill() })
	pid := []byte(strconv.Itoa(vmProc.Process.Pid))
	for _, f := range []string{"ha.pid", "qemu.pid"} {
		must(w.t, os.WriteFile(filepath.Join(w.h.LimaHome(), w.box, f), pid, 0o600))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// session writes the box's trusted per-project file setting idle_stop to idle and stop_on_exit
// to stopOnExit, starts a session process (see TestMain) that loads it and holds the session
// for hold, and waits until it has marked the box and started its watcher.
func (w *watchEnv) session(idle string, stopOnExit bool, hold string) *exec.Cmd {
	w.t.Helper()
	must(w.t, os.MkdirAll(filepath.Dir(w.h.ProjectConfig(w.box)), 0o700))
	must(w.t, os.WriteFile(w.h.ProjectConfig(w.box), []byte(fmt.Sprintf("idle_stop = %q\nstop_on_exit = %t\n", idle, stopOnExit)), 0o600))
	watch := "watch"
	if w.noWatcher {
		watch = "none"
	}
	cmd := exec.Command(os.Args[0], "session", w.box, idle, strconv.FormatBool(stopOnExit), hold, watch)
	cmd.Env = w.env
	out, err := cmd.StdoutPipe()
	must(w.t, err)
	cmd.Stderr = os.Stderr
	must(w.t, cmd.Start())
	w.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	b := make([]byte, 8)
	if n, _ := out.Read(b); string(b[:n]) != "session\n" {
		w.t.Fatalf("session process said %q", b[:n])
	}
	return cmd
}

func (w *watchEnv) running() bool {
	st, err := w.manager().Inspect(w.box)
	return err == nil && st.Status == "Running"
}

// manager is the box manager of w, in this process.
func (w *watchEnv) manager() *vm.Manager {
	return &vm.Manager{Limactl: filepath.Join(w.h.Dir, "limactl"), Home: w.h}
}

// waitStopped waits up to bound for the box to stop and returns how long it took.
func (w *watchEnv) waitStopped(bound time.Duration) time.Duration {
	w.t.Helper()
	start := time.Now()
	for time.Since(start) < bound {
		if !w.running() {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.t.Fatalf("box still running %v after the last session ended; limactl calls: %q", bound, w.read(w.calls))
	return 0
}

// stillRunning fails unless the box is still running after d.
func (w *watchEnv) stillRunning(d time.Duration, why string) {
	w.t.Helper()
	time.Sleep(d)
	if !w.running() {
		w.t.Fatalf("box stopped %s; limactl calls: %q", why, w.read(w.calls))
	}
}

func (w *watchEnv) read(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// kill ends a session process by SIGKILL: nothing in it runs after, the kernel drops its marker
// lock.
func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
}

// checkStopRecorded: the box was stopped once, by the fake limactl, and the audit log has the
// watcher's stop record with its reason.
func (w *watchEnv) checkStopRecorded(reason string) {
	w.t.Helper()
	if calls := w.read(w.calls); strings.Count(calls, "stop "+w.box) != 1 {
		w.t.Errorf("limactl calls %q, want one stop of %s", calls, w.box)
	}
	log := w.read(w.h.SessionsLog())
	if !strings.Contains(log, `"event":"stop"`) || !strings.Contains(log, reason) {
		w.t.Errorf("audit log %q has no stop record naming %q", log, reason)
	}
}

// stopBox stops the stand-in box as Lima would, through the fake limactl.
func (w *watchEnv) stopBox() {
	w.t.Helper()
	must(w.t, w.manager().Stop(context.Background(), w.box))
	if w.running() {
		w.t.Fatal("the stand-in box still runs after limactl stop")
	}
	must(w.t, os.Remove(w.calls))
}

// watchLog is the log the box's detached watchers write to.
func (w *watchEnv) watchLog() string { return filepath.Join(w.h.Logs(), w.box+".watch.log") }

// waitWatchLog waits up to bound for want in the watch log: what a watcher prints as it ends.
func (w *watchEnv) waitWatchLog(want string, bound time.Duration) {
	w.t.Helper()
	for start := time.Now(); time.Since(start) < bound; time.Sleep(50 * time.Millisecond) {
		if strings.Contains(w.read(w.watchLog()), want) {
			return
		}
	}
	w.t.Fatalf("watch log %q: no %q after %v", w.read(w.watchLog()), want, bound)
}
