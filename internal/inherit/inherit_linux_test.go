package inherit

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloseOnExec: a descriptor without close-on-exec reaches a child (the control: what an
// inherited one does today), and after CloseOnExec the same descriptor, still open here, does
// not; both the close_range path and the listing fallback.
func TestCloseOnExec(t *testing.T) {
	for name, mark := range map[string]func(int) error{
		"close_range": CloseOnExec,
		"listing":     func(from int) error { return markListed(fdDir(), from) },
	} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(os.Args[0])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			const fd = 200
			if err := unix.Dup3(int(f.Fd()), fd, 0); err != nil { // no O_CLOEXEC: as a shell's 200<file leaves it
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if !childSees(t, "200") {
				t.Fatal("control: a child does not see descriptor 200 left without close-on-exec")
			}
			if err := mark(3); err != nil {
				t.Fatal(err)
			}
			if childSees(t, "200") {
				t.Error("after CloseOnExec a child still sees descriptor 200")
			}
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
				t.Errorf("descriptor 200 was closed here, not only marked: %v", err)
			}
		})
	}
}

func fdDir() string {
	if _, err := os.Stat("/proc/self/fd"); err == nil {
		return "/proc/self/fd"
	}
	return "/dev/fd"
}

// childSees reports whether a shell started now has descriptor fd open.
func childSees(t *testing.T, fd string) bool {
	out, err := exec.Command("/bin/sh", "-c", "ls "+fdDir()+"/").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(" "+strings.Join(strings.Fields(string(out)), " ")+" ", " "+fd+" ")
}
