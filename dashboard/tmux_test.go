package dashboard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/vm"
)

// tuiEnv, when set, makes the test binary run the dashboard itself on its terminal: the tmux test
// starts it that way inside a real pseudo-terminal.
const tuiEnv = "CORRAL_DASHBOARD_TEST_TUI"

func TestMain(m *testing.M) {
	if os.Getenv(tuiEnv) == "1" {
		code := runTUI()
		// tmux does not always collect a pane's exit status (pane_dead_status stays empty), so
		// the dashboard's status is also written where the test reads it.
		os.WriteFile(os.Getenv(tuiEnv+"_STATUS"), []byte(fmt.Sprint(code)), 0o600)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// runTUI runs the dashboard on $CORRAL_HOME with Lima's real store, as the command does.
func runTUI() int {
	h, err := home.Resolve(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l := &Loader{Home: h, Inspect: (&vm.Manager{Home: h}).Inspect, ReadEgress: readLog}
	cfg := Config{Load: l.Load, Decisions: l.Decisions, Self: os.Getenv(tuiEnv + "_SELF"), Color: os.Getenv("NO_COLOR") == "", Interval: 200 * time.Millisecond}
	if err := Run(context.Background(), cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// tmuxServer is a tmux server of the test's own, on its own socket.
type tmuxServer struct {
	t    *testing.T
	bin  string
	sock string
	conf string
	env  []string
}

func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"-S", s.sock, "-f", s.conf}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *tmuxServer) screen() string { return s.run("capture-pane", "-p", "-t", "dash") }

// waitFor polls the screen until ok says yes, for at most 15 s.
func (s *tmuxServer) waitFor(what string, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		scr := s.screen()
		if ok(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s; the screen:\n%s", what, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func contains(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}

// TestDashboardInTmux drives the dashboard through a real terminal: it shows the boxes and the
// denial already logged, then a denial appended while it runs (no restart), opens a box's egress
// view, and quits on q with status 0.
func TestDashboardInTmux(t *testing.T) {
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (scripts/setup.sh installs it): cannot drive a real terminal")
	}
	h := testHome(t)
	writeMeta(t, h, vm.Meta{Box: "alpha", Project: "/src/alpha", Network: "broker"})
	writeMeta(t, h, vm.Meta{Box: "beta", Project: "/src/beta", Network: "off"})
	logEntry(t, h, "alpha", allow("proxy.golang.org", 443, "proxy.golang.org"))
	logEntry(t, h, "alpha", deny("old.example", 443, "host not in allow-list"))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &tmuxServer{t: t, bin: bin, sock: filepath.Join(dir, "sock"), conf: filepath.Join(dir, "tmux.conf"), env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TERM=xterm-256color", "NO_COLOR=1",
		"CORRAL_HOME=" + h.Dir, "LIMA_HOME=" + os.Getenv("LIMA_HOME"), tuiEnv + "=1",
		tuiEnv + "_STATUS=" + filepath.Join(dir, "status"), tuiEnv + "_SELF=" + filepath.Join(dir, "fake-git-corral"),
	}}
	// The actions' git corral is a script that records its arguments, so the test sees what a key
	// ran through the real hand-over of the terminal.
	fake := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + filepath.Join(dir, "argv") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "fake-git-corral"), []byte(fake), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.conf, []byte("set -g remain-on-exit on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.run("new-session", "-d", "-s", "dash", "-x", "110", "-y", "24", self)
	t.Cleanup(func() { exec.Command(bin, "-S", s.sock, "kill-server").Run() })

	scr := s.waitFor("the boxes", contains("alpha", "beta", "old.example:443", "broker"))
	if strings.Contains(scr, "just-now.example") || strings.Contains(scr, "proxy.golang.org") {
		t.Fatalf("the list shows a denial not logged yet or an allowed connection:\n%s", scr)
	}
	logEntry(t, h, "alpha", deny("just-now.example", 8443, "host not in allow-list"))
	scr = s.waitFor("the denial logged while it runs", contains("just-now.example:8443"))
	capture(t, "", scr)
	s.run("send-keys", "-t", "dash", "e")
	scr = s.waitFor("the egress view", contains("egress of box alpha", "just-now.example:8443", "old.example:443", "allow", "proxy.golang.org:443"))
	capture(t, ".egress", scr)
	s.run("send-keys", "-t", "dash", "Escape")
	s.waitFor("the list again", contains("recent denials"))
	if _, err := os.Stat(filepath.Join(dir, "argv")); err == nil {
		t.Fatal("an action ran before any key asked for one")
	}
	s.run("send-keys", "-t", "dash", "s")
	s.waitFor("the stop prompt", contains("stop box alpha? y: stop"))
	s.run("send-keys", "-t", "dash", "y")
	s.waitFor("the dashboard back after the stop", contains("stop alpha: done", "recent denials"))
	if argv, err := os.ReadFile(filepath.Join(dir, "argv")); err != nil || string(argv) != "--box\nalpha\nstop\n" {
		t.Fatalf("s y ran git corral with %q (%v), want --box alpha stop", argv, err)
	}
	if st := s.run("display-message", "-p", "-t", "dash", "#{pane_dead}"); strings.TrimSpace(st) != "0" {
		t.Fatalf("the dashboard ended before q: pane_dead %q", st)
	}
	s.run("send-keys", "-t", "dash", "q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		dead := strings.TrimSpace(s.run("display-message", "-p", "-t", "dash", "#{pane_dead}"))
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if dead == "1" && err == nil {
			if string(status) != "0" {
				t.Fatalf("after q the dashboard exited with status %s, want 0; the screen:\n%s", status, s.screen())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after q: pane_dead %q, status file %q (%v); want a dead pane and status 0; the screen:\n%s", dead, status, err, s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// capture writes a screen to $DASHBOARD_CAPTURE plus suffix, when set: docs/DASHBOARD.md shows it.
func capture(t *testing.T, suffix, screen string) {
	if out := os.Getenv("DASHBOARD_CAPTURE"); out != "" {
		if err := os.WriteFile(out+suffix, []byte(strings.TrimRight(screen, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
