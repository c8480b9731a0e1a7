// Package handoff execs the full git corral binary for every command line the front does not
// run itself, before the front's own package initialisers: importing it is the whole of its use.
//
// Why an initialiser: Go runs every linked package's initialisers before main, and the front
// links the light tier's host side (the manifest's and the configuration's TOML, policy,
// Landlock: dozens of initialisers). A box command needs none of it, and pays
// for the front's start on top of the full binary's. The linker initialises a package once its
// imports are and otherwise in the order of import paths, so this one, which imports only
// syscall (as package dispatch does), runs after the runtime and a dozen small packages and
// before any of those (TestHandoffBeforeInitialisers). For the same reason it reads its
// arguments from /proc/self/cmdline and its path from /proc/self/exe rather than through os.
//
// Rules:
//   - It execs only for a command line that is neither a run dispatch.Takes nor the inside
//     steps ('sandbox --stage NAME'), and only when the full binary is installed beside the
//     front (dispatch.Beside); the full binary gets this process's argv and environment
//     unchanged.
//   - If anything here fails, it returns and the front's main decides as it would have: it
//     execs the full binary itself, or says why it cannot.
package handoff

import (
	"syscall"

	"github.com/git-corral/git-corral/sandbox/dispatch"
)

func init() {
	argv := cmdline()
	if len(argv) < 1 || Front(argv[1:]) {
		return
	}
	buf := make([]byte, 4096)
	n, err := syscall.Readlink("/proc/self/exe", buf)
	if err != nil || n == len(buf) {
		return
	}
	if full := dispatch.Beside(string(buf[:n]), dispatch.FullName); full != "" {
		syscall.Exec(full, argv, syscall.Environ())
	}
}

// Front reports whether the front runs args itself: a sandbox run, or the inside steps.
func Front(args []string) bool {
	_, stage := dispatch.Stage(args)
	return stage || dispatch.Takes(args)
}

// cmdline returns this process's argv, nil if it cannot be read.
func cmdline() []string {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var data []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
	}
	var argv []string
	for start, i := 0, 0; i < len(data); i++ {
		if data[i] == 0 {
			argv = append(argv, string(data[start:i]))
			start = i + 1
		}
	}
	return argv
}
