package vm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/internal/sshtest"
	"github.com/git-corral/git-corral/provision"
)

// TestInbandGuard runs sessions whose command follows a stand-in session check in the same
// session, against the real sshd: the command runs and reads stdin only after a passing report;
// a failing report, a missing one, or an unreadable one keeps it from running, reads not one
// byte of stdin and comes back as the matching error; what the login shell printed before the
// report reaches stderr only when the check passed, and the report line never does.
func TestInbandGuard(t *testing.T) {
	_, ep := testBox(t, sshtest.Options{})
	c := dialT(t, ep)
	dir := userDir(t, "inband", 0o755)
	check := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return ". " + p + " inband"
	}
	marker := strings.TrimPrefix(strings.TrimSpace(provision.InbandMarker), "\x1e")
	pass := check("pass", `echo "from the login shell" >&2; printf '\036`+marker+` {"ok":true,"mode":"offline","failures":[]}\n' >&2`)
	fail := check("fail", `printf '\036`+marker+` {"ok":false,"mode":"offline","failures":["box user is in root-equivalent groups: disk"]}\n' >&2; return 1`)
	garbled := check("garbled", `printf '\036`+marker+` {"ok":tru\n' >&2; return 1`)
	silent := check("silent", `echo "no report" >&2; return 1`)
	missing := "[ -r " + filepath.Join(dir, "absent") + " ] || exit 97; . " + filepath.Join(dir, "absent") + " inband"
	cmd := []string{"sh", "-c", `echo ran; cat; echo err >&2`}

	type result struct {
		code           int
		err            error
		stdout, stderr string
		unread         string
	}
	run := func(guard string) result {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, "secret input\n")
		w.Close()
		var stdout, stderr bytes.Buffer
		code, err := c.Run(context.Background(), SessionOptions{Argv: cmd, Stdin: r, Stdout: &stdout, Stderr: &stderr, InbandGuard: guard})
		rest, _ := io.ReadAll(r)
		return result{code, err, stdout.String(), stderr.String(), string(rest)}
	}

	got := run(pass)
	if got.err != nil || got.stdout != "ran\nsecret input\n" || got.stderr != "from the login shell\nerr\n" {
		t.Errorf("passing check: %+v; want the command run with its stdin, the shell's line and the command's stderr without the report", got)
	}
	for _, tc := range []struct {
		name, guard string
		code        int
		want        func(error) bool
	}{
		{"failing report", fail, ExitSessionFailure, func(err error) bool {
			var ge *InbandGuardError
			return errors.As(err, &ge) && errors.Is(err, ErrGuard) && strings.Contains(err.Error(), "root-equivalent groups: disk")
		}},
		{"unreadable report", garbled, ExitSessionFailure, func(err error) bool {
			var ge *InbandGuardError
			return errors.As(err, &ge) && strings.Contains(err.Error(), "unreadable")
		}},
		{"no report", silent, 1, func(err error) bool { return errors.Is(err, ErrNoInbandReport) }},
		{"no session check in the box", missing, provision.InbandNoCheckExit, func(err error) bool { return errors.Is(err, ErrNoInbandReport) }},
	} {
		got := run(tc.guard)
		if got.code != tc.code || !tc.want(got.err) {
			t.Errorf("%s: exit %d, error %v", tc.name, got.code, got.err)
		}
		if got.stdout != "" || got.stderr != "" {
			t.Errorf("%s: the command ran or the check's output leaked: stdout %q stderr %q", tc.name, got.stdout, got.stderr)
		}
		if got.unread != "secret input\n" {
			t.Errorf("%s: stdin was read (left %q)", tc.name, got.unread)
		}
	}
	if _, err := c.Run(context.Background(), SessionOptions{Argv: cmd, TTY: true, InbandGuard: pass}); err == nil {
		t.Error("an in-band check with a terminal was accepted")
	}
}
