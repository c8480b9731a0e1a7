package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrelude runs the command line of a session with a prelude in sh and bash: the prelude's
// hostile arguments reach it as exactly its "$@" and run nothing, it runs in the session's
// shell (what it exports the command sees; the command, a program, is exec'd as without a
// prelude), a failing last command does not stop the command, and a NUL is refused. The
// control without a prelude is TestRemoteCommand's.
func TestPrelude(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	args := hostile(canary)
	pre := Prelude{Script: `for a; do printf '%s\0' "$a"; done >"$OUT"; CORRAL_T=set; export CORRAL_T; false`, Args: args}
	cmd, err := CommandLine([]string{"sh", "-c", `echo "$CORRAL_T $$"`}, dir, pre)
	if err != nil {
		t.Fatal(err)
	}
	if want := "cd " + shellQuote(dir) + " && { set -- "; !strings.HasPrefix(cmd, want) || !strings.HasSuffix(cmd, "\n:; } && exec 'sh' '-c' '"+`echo "$CORRAL_T $$"`+"'") {
		t.Errorf("command line %q: want the cd, the prelude block, then exec of the command", cmd)
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		out := filepath.Join(dir, "args")
		c := exec.Command(shell, "-c", `echo "$$"; `+cmd)
		c.Env = []string{"OUT=" + out, "PATH=/usr/bin:/bin"}
		b, err := c.Output()
		if err != nil {
			t.Fatalf("%s -c %q: %v", shell, cmd, err)
		}
		lines := strings.Fields(string(b))
		if len(lines) != 3 || lines[1] != "set" || lines[0] != lines[2] {
			t.Errorf("%s: output %q, want the session shell's PID, then the command's export and the same PID (exec)", shell, b)
		}
		got, _ := os.ReadFile(out)
		if s := strings.Split(strings.TrimSuffix(string(got), "\x00"), "\x00"); !equalStrings(s, args) {
			t.Errorf("%s: prelude arguments\n got %q\nwant %q", shell, s, args)
		}
		if _, err := os.Stat(canary); err == nil {
			t.Fatalf("%s ran a smuggled command: %s exists", shell, canary)
		}
	}
	if _, err := CommandLine([]string{"true"}, "", Prelude{Script: ":", Args: []string{"a\x00b"}}); err == nil || !strings.Contains(err.Error(), "prelude argument 0 contains a NUL byte") {
		t.Errorf("a NUL in a prelude argument: %v, want it refused", err)
	}
}
