package vm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// TestGate runs gated sessions against the real sshd: the session is open while the gate is
// undecided, but the command does not run and reads nothing before Open; after Open it runs
// with all of the caller's stdin (the go-ahead line is not part of it); after Refuse it never
// runs, Run returns ErrGateRefused and not one byte of stdin was read.
func TestGate(t *testing.T) {
	_, ep := testBox(t, sshtest.Options{})
	c := dialT(t, ep)
	dir := userDir(t, "gate", 0o777)

	type result struct {
		code           int
		err            error
		stdout, stderr string
	}
	start := func(name string, g *Gate) (marker string, stdin *os.File, res <-chan result) {
		marker = filepath.Join(dir, name)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, "first line\nsecond line\n")
		w.Close()
		ch := make(chan result, 1)
		go func() {
			var stdout, stderr bytes.Buffer
			code, err := c.Run(context.Background(), SessionOptions{
				Argv:  []string{"sh", "-c", `touch "$1"; cat; echo err >&2`, "sh", marker},
				Stdin: r, Stdout: &stdout, Stderr: &stderr, Gate: g,
			})
			ch <- result{code, err, stdout.String(), stderr.String()}
		}()
		return marker, r, ch
	}
	// The session's shell is up while the gate is undecided: a command that did not wait would
	// have touched its marker well within this time (the same command ungated takes a few ms).
	undecided := func(marker string, res <-chan result) {
		t.Helper()
		time.Sleep(500 * time.Millisecond)
		select {
		case r := <-res:
			t.Fatalf("the gated session ended before its gate was decided: %+v", r)
		default:
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatalf("the gated command ran before its gate was opened (stat %s: %v)", marker, err)
		}
	}

	t.Run("opened", func(t *testing.T) {
		g := NewGate()
		marker, stdin, res := start("opened", g)
		undecided(marker, res)
		g.Open()
		r := <-res
		if r.err != nil || r.code != 0 || r.stdout != "first line\nsecond line\n" || r.stderr != "err\n" {
			t.Errorf("opened gate: %+v; want the command run with all of its stdin", r)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("the command did not run: %v", err)
		}
		if rest, _ := io.ReadAll(stdin); len(rest) != 0 {
			t.Errorf("stdin left unread: %q", rest)
		}
	})
	t.Run("refused", func(t *testing.T) {
		g := NewGate()
		marker, stdin, res := start("refused", g)
		undecided(marker, res)
		g.Refuse()
		var r result
		select {
		case r = <-res:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after Refuse")
		}
		if !errors.Is(r.err, ErrGateRefused) || r.code != ExitSessionFailure || r.stdout != "" || r.stderr != "" {
			t.Errorf("refused gate: %+v; want ErrGateRefused, exit %d, no output", r, ExitSessionFailure)
		}
		time.Sleep(200 * time.Millisecond) // the guest shell reads EOF and exits; it must not go on
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Errorf("the command ran after its gate was refused (stat %s: %v)", marker, err)
		}
		if rest, _ := io.ReadAll(stdin); string(rest) != "first line\nsecond line\n" {
			t.Errorf("stdin read by a refused session: left %q", rest)
		}
	})
	t.Run("context ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		g := NewGate()
		res := make(chan error, 1)
		go func() {
			_, err := c.Run(ctx, SessionOptions{Argv: []string{"true"}, Gate: g})
			res <- err
		}()
		time.Sleep(200 * time.Millisecond)
		cancel()
		if err := <-res; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled while gated: %v; want context.Canceled", err)
		}
	})
	t.Run("not with a terminal", func(t *testing.T) {
		if _, err := c.Run(context.Background(), SessionOptions{Argv: []string{"true"}, TTY: true, Gate: NewGate()}); err == nil {
			t.Error("a gated session with a terminal was accepted")
		}
	})
}

// TestGateWriter holds output until the decision: written through after Open, dropped after
// Refuse.
func TestGateWriter(t *testing.T) {
	for _, open := range []bool{true, false} {
		g := NewGate()
		var buf bytes.Buffer
		w := gateWriter{g: g, w: &buf}
		wrote := make(chan struct{})
		go func() {
			w.Write([]byte("held"))
			close(wrote)
		}()
		select {
		case <-wrote:
			t.Fatal("Write returned before the gate was decided")
		case <-time.After(50 * time.Millisecond):
		}
		if open {
			g.Open()
		} else {
			g.Refuse()
		}
		<-wrote
		want := map[bool]string{true: "held", false: ""}[open]
		if buf.String() != want {
			t.Errorf("open=%v: wrote %q, want %q", open, buf.String(), want)
		}
	}
}
