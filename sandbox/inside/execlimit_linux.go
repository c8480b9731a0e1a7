package inside

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// execLimited execs argv under the address-space limit (RLIMIT_AS) memory. The limit is set by
// the last system call before execve, with nothing allocated in between: this Go process's own
// address space is already larger than most limits, so any heap growth after the limit (the
// runtime's, or syscall.Exec's own argument copies) crashed this step with "fatal error:
// runtime: cannot allocate memory" instead of limiting the command. It returns only on failure.
func execLimited(argv, env []string, memory uint64) error {
	argv0, err := syscall.BytePtrFromString(argv[0])
	if err != nil {
		return err
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	// The Go runtime raised the soft open-file limit to the hard one at start; syscall.Exec
	// puts it back for the command, and so does this (to the usual 1024 where the hard limit
	// is higher: the original soft value is the runtime's secret).
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err == nil && nofile.Cur > 1024 {
		nofile.Cur = 1024
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
			return fmt.Errorf("set the open-file limit: %w", err)
		}
	}
	prefix := "corral: sandbox: exec " + argv[0] + ": "
	suffix := " (a program, and a script's interpreter, must be in exec.allow)\n"
	// No collection and no other thread's work between the limit and the exec.
	debug.SetGCPercent(-1)
	runtime.LockOSThread()
	rlim := unix.Rlimit{Cur: memory, Max: memory}
	if _, _, e := unix.RawSyscall6(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_AS, uintptr(unsafe.Pointer(&rlim)), 0, 0, 0); e != 0 {
		return fmt.Errorf("set memory limit to %d: %w", memory, e)
	}
	_, _, e := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	// The exec failed under the limit, which cannot be lifted again: report and exit with
	// raw system calls only (Errno's text is a table entry, nothing is allocated).
	code := 126
	if e == unix.ENOENT {
		code = 127
	}
	rawWrite(2, prefix)
	rawWrite(2, e.Error())
	rawWrite(2, suffix)
	unix.RawSyscall(unix.SYS_EXIT_GROUP, uintptr(code), 0, 0)
	return e
}

// rawWrite writes s to fd with one system call and no allocation.
func rawWrite(fd int, s string) {
	if len(s) > 0 {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(len(s)))
	}
}
