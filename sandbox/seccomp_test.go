//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSeccompIoctlLowWord loads the sandbox's filter alone and proves that TIOCSTI and TIOCLINUX
// are refused whatever the request's high 32 bits hold (the kernel ignores them), while the
// same call without the filter reaches the kernel (ENOTTY on /dev/null), and an ordinary ioctl
// passes the filter.
func TestSeccompIoctlLowWord(t *testing.T) {
	self := mustExecutable(t)
	cases := []struct {
		req        uint64
		filtered   string
		unfiltered string
	}{
		{unix.TIOCSTI, "operation not permitted", "inappropriate ioctl"},
		{unix.TIOCSTI | 1<<32, "operation not permitted", "inappropriate ioctl"},
		{unix.TIOCSTI | 0xffffffff00000000, "operation not permitted", "inappropriate ioctl"},
		{unix.TIOCLINUX | 1<<40, "operation not permitted", "inappropriate ioctl"},
		{unix.TIOCGWINSZ, "inappropriate ioctl", "inappropriate ioctl"},
		{unix.TIOCSTI + 1, "inappropriate ioctl", "inappropriate ioctl"},
	}
	for _, c := range cases {
		for _, mode := range []string{"filter", "none"} {
			want := map[string]string{"filter": c.filtered, "none": c.unfiltered}[mode]
			out, _ := exec.Command(self, "probe", "seccomp-ioctl", mode, fmt.Sprintf("%#x", c.req)).CombinedOutput()
			if !strings.Contains(string(out), want) {
				t.Errorf("ioctl %#x (%s): %q, want %q", c.req, mode, strings.TrimSpace(string(out)), want)
			}
		}
	}
}

// TestSeccompProgram checks that the filter assembles into whole sock_filter records.
func TestSeccompProgram(t *testing.T) {
	b, err := SeccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || len(b)%8 != 0 {
		t.Fatalf("filter is %d bytes, want a non-empty multiple of 8", len(b))
	}
}

func mustExecutable(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}
