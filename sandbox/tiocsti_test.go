//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTIOCSTI gives the sandboxed command a real terminal as its stdin and proves it cannot push
// keystrokes into it; the control, the same probe on the host with that terminal as its
// controlling terminal, can.
func TestTIOCSTI(t *testing.T) {
	f := newFixture(t)
	master, slave := openPty(t)
	defer master.Close()
	defer slave.Close()

	ctl := exec.Command(f.self, "probe", "tiocsti")
	ctl.Stdin = slave
	ctl.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := ctl.CombinedOutput()
	if err != nil {
		t.Fatalf("control: the host's probe could not inject into its own terminal: %v\n%s", err, out)
	}

	// git corral itself runs with the terminal as its controlling terminal, as it does for a
	// user: the sandbox's new session and the seccomp rule must each keep the command off it.
	run := exec.Command(f.self, "probe", "sandboxed-tiocsti", f.corral)
	run.Stdin = slave
	run.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	var buf bytes.Buffer
	run.Stdout, run.Stderr = &buf, &buf
	run.Run()
	if run.ProcessState.ExitCode() != 3 || !strings.Contains(buf.String(), "operation not permitted") {
		t.Errorf("in the sandbox: status %d, %q; want 3 and operation not permitted", run.ProcessState.ExitCode(), buf.String())
	}
}

// sandboxedTIOCSTI runs the tiocsti probe in a sandbox from this process, whose stdin is its
// controlling terminal, and exits with the probe's status.
func sandboxedTIOCSTI(corral string) error {
	self, _ := os.Executable()
	res, err := Run(context.Background(), Options{
		Argv: []string{self, "probe", "tiocsti"}, Self: self, CorralHome: corral, Cwd: "/",
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Lookup: func(string) (string, bool) { return "", false },
	})
	if err != nil {
		return err
	}
	os.Exit(res.Status)
	return nil
}

// openPty opens a pseudo-terminal pair.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	must(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	must(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	return m, s
}
