package vm

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// warmPIDs lists the test user's warm shells waiting in the box (the real sshd's children).
func warmPIDs(t *testing.T, user string) []int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-u", user, "-f", "corral_cmd").Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// waitWarm waits until n warm shells wait in the box.
func waitWarm(t *testing.T, user string, n int) []int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p := warmPIDs(t, user); len(p) >= n {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d warm shells after 10 s: %v", n, warmPIDs(t, user))
		}
	}
}

// TestMuxWarmShell: a session that starts with exec runs in a shell the holder started before
// the session was asked for (its PID waited in the box beforehand), with the same command
// line, stdin and status as a fresh session; environment values reach the command either way;
// a warm shell that was killed while waiting is replaced, and the session
// that would have taken it still runs.
func TestMuxWarmShell(t *testing.T) {
	srv, ep := testBox(t, sshtest.Options{AcceptEnv: "*"})
	p, _, _ := startMux(t, ep, MuxOptions{Idle: time.Minute, WarmShell: true})
	c := dialMuxT(t, p)
	ctx := context.Background()

	before := waitWarm(t, srv.User, warmShells)
	out, code, err := c.Output(ctx, []string{"sh", "-c", `echo "$PPID"; printf '%s|' "$1"; cat`, "sh", "it's a \"word\"\nwith a newline"})
	if err != nil || code != 0 {
		t.Fatalf("warm session: exit %d, %v", code, err)
	}
	lines := strings.SplitN(string(out), "\n", 2)
	ppid, _ := strconv.Atoi(lines[0])
	// sh's parent is the session's shell: exec replaced the warm shell's bash with sh, so its
	// parent is sshd's session process, which is the warm shell's parent too.
	var parents []int
	for _, pid := range before {
		b, _ := exec.Command("ps", "-o", "ppid=", "-p", strconv.Itoa(pid)).Output()
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		parents = append(parents, n)
	}
	found := false
	for _, n := range parents {
		found = found || n == ppid
	}
	if !found {
		t.Errorf("the session's command ran under sshd process %d, not under one of the warm shells' (%v): it did not take a warm shell", ppid, parents)
	}
	if lines[1] != "it's a \"word\"\nwith a newline|" {
		t.Errorf("argument through the warm shell: %q", lines[1])
	}

	// Stdin starts right after the command: the first byte is the caller's.
	in := []byte("\x00first\nsecond")
	var stdout bytes.Buffer
	if code, err := c.Run(ctx, SessionOptions{Argv: []string{"od", "-An", "-c"}, Stdin: bytes.NewReader(in), Stdout: &stdout}); code != 0 || err != nil ||
		strings.Join(strings.Fields(stdout.String()), " ") != `\0 f i r s t \n s e c o n d` {
		t.Errorf("stdin through a warm shell: exit %d (%v), od says %q", code, err, stdout.String())
	}

	// Environment values: a plain name is exported in the warm shell, its value quoted; a name
	// that sshd, the login or bash itself may read (TERM, BASH_*, …) gets a fresh session, where
	// sshd sets it before the shell starts.
	value := "it's \"$(id)\" `x` \\ $HOME\nline two"
	for _, tc := range []struct {
		name string
		warm bool
	}{{"CORRAL_T", true}, {"TERM", false}, {"BASH_T", false}} {
		before := waitWarm(t, srv.User, warmShells)
		var envOut bytes.Buffer
		code, err := c.Run(ctx, SessionOptions{Argv: []string{"sh", "-c", `printf %s "$` + tc.name + `"`}, Env: map[string]string{tc.name: value}, Stdout: &envOut})
		if code != 0 || envOut.String() != value {
			t.Errorf("%s through the holder: exit %d (%v), got %q, want %q", tc.name, code, err, envOut.String(), value)
		}
		// A warm shell that was taken has ended (its command did); the refill is a new PID.
		taken := 0
		for _, pid := range before {
			if exec.Command("kill", "-0", strconv.Itoa(pid)).Run() != nil {
				taken++
			}
		}
		if tc.warm && taken != 1 {
			t.Errorf("a session with %s took %d warm shells, want 1", tc.name, taken)
		}
		if !tc.warm && taken != 0 {
			t.Errorf("a session with %s took %d warm shells, want a fresh session", tc.name, taken)
		}
	}

	// Warm shells killed while they wait: the next sessions still run, and new ones come.
	for _, pid := range waitWarm(t, srv.User, warmShells) {
		exec.Command("kill", "-KILL", strconv.Itoa(pid)).Run()
	}
	time.Sleep(200 * time.Millisecond)
	for i := range 3 {
		if out, code, err := c.Output(ctx, []string{"echo", "alive"}); code != 0 || err != nil || string(out) != "alive\n" {
			t.Errorf("session %d after the warm shells were killed: %q exit %d (%v)", i, out, code, err)
		}
	}
	waitWarm(t, srv.User, warmShells)
}

// TestMuxWarmShellSessionLimit: on a box whose sshd allows few sessions per connection (10 by
// default; boxes made before git corral raised it), a session that finds none left because
// warm shells hold them still runs: the holder ends its warm shells and keeps none.
func TestMuxWarmShellSessionLimit(t *testing.T) {
	srv, ep := testBox(t, sshtest.Options{AcceptEnv: "*", MaxSessions: 3})
	p, _, _ := startMux(t, ep, MuxOptions{Idle: time.Minute, WarmShell: true})
	c := dialMuxT(t, p)
	waitWarm(t, srv.User, warmShells)
	// TERM makes each a fresh session: with two warm shells waiting, the second finds sshd's
	// three sessions taken.
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			var out bytes.Buffer
			code, err := c.Run(context.Background(), SessionOptions{Argv: []string{"sh", "-c", "sleep 1; echo $0", strconv.Itoa(i)}, Env: map[string]string{"TERM": "dumb"}, Stdout: &out})
			if err == nil && (code != 0 || out.String() != strconv.Itoa(i)+"\n") {
				err = fmt.Errorf("exit %d, output %q", code, out.String())
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent session with warm shells holding sessions: %v", err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(warmPIDs(t, srv.User)); n != 0 {
		t.Errorf("%d warm shells still wait after the box ran out of sessions, want none", n)
	}
	if out, code, err := c.Output(context.Background(), []string{"echo", "ok"}); err != nil || code != 0 || string(out) != "ok\n" {
		t.Errorf("session afterwards: %q %d %v", out, code, err)
	}
}

// TestMuxWarmShellGated: a gated session (gate.go) bound to a warm shell waits for its go-ahead
// like a fresh one, and then gets all of its stdin: the holder's command line, the go-ahead line
// and the caller's bytes arrive in that order on the one stdin.
func TestMuxWarmShellGated(t *testing.T) {
	srv, ep := testBox(t, sshtest.Options{AcceptEnv: "*"})
	p, _, _ := startMux(t, ep, MuxOptions{Idle: time.Minute, WarmShell: true})
	c := dialMuxT(t, p)
	before := waitWarm(t, srv.User, warmShells)
	g := NewGate()
	res := make(chan string, 1)
	go func() {
		var out bytes.Buffer
		code, err := c.Run(context.Background(), SessionOptions{Argv: []string{"sh", "-c", `echo "$X"; cat`},
			Env: map[string]string{"X": "value"}, Stdin: strings.NewReader("line 1\nline 2\n"), Stdout: &out, Gate: g})
		res <- fmt.Sprintf("%d %v %q", code, err, out.String())
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-res:
		t.Fatalf("the gated session ended before its gate was decided: %s", r)
	default:
	}
	g.Open()
	if r := <-res; r != `0 <nil> "value\nline 1\nline 2\n"` {
		t.Errorf("gated session on a warm shell: %s", r)
	}
	gone := 0
	for _, pid := range before {
		if exec.Command("kill", "-0", strconv.Itoa(pid)).Run() != nil {
			gone++
		}
	}
	if gone != 1 {
		t.Errorf("%d of the warm shells %v ended with the session, want the one it took", gone, before)
	}
}
