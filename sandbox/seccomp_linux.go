package sandbox

// Seccomp rules: everything is allowed except the calls below, which fail with EPERM (clone3
// with ENOSYS, so that libc falls back to clone, whose flags the filter can see):
//   - debugging and reading other processes: ptrace, process_vm_readv/writev, kcmp;
//   - kernel facilities a sandbox has no business with: bpf, perf_event_open, keyctl, add_key,
//     request_key, userfaultfd, io_uring (its operations bypass seccomp), syslog;
//   - the mount API and namespaces: mount, umount2, pivot_root, the new mount API, setns,
//     unshare, and clone with any CLONE_NEW* flag;
//   - kernel modules, kexec, reboot, swap, accounting, quotas, I/O ports;
//   - setting clocks: clock_settime, clock_adjtime, settimeofday, adjtimex;
//   - memfd_create and memfd_secret, so that no program is executed from anonymous memory;
//   - ioctl TIOCSTI and TIOCLINUX on any descriptor, compared on the low 32 bits of the
//     request (the kernel ignores the high half, so an equality on 64 bits could be bypassed).
// The filter is assembled by github.com/elastic/go-seccomp-bpf (which also refuses the x32 ABI
// and any other architecture) and handed to bubblewrap as raw sock_filter records.

import (
	"bytes"
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register", "syslog",
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
	"fspick", "mount_setattr", "setns", "unshare",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "iopl", "ioperm", "open_by_handle_at",
	"clock_settime", "clock_adjtime", "settimeofday", "adjtimex",
	"memfd_create", "memfd_secret",
}

// namespaceFlags are the clone flags that make a new namespace.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP |
	unix.CLONE_NEWTIME

// deniedIoctls are refused on every descriptor.
var deniedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// seccompPolicy is the filter's policy.
func seccompPolicy() seccomp.Policy {
	var ioctl []seccomp.ArgumentConditions
	for _, req := range deniedIoctls {
		ioctl = append(ioctl, lowWordEquals(1, req))
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: deniedSyscalls},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags}}},
				{Name: "ioctl", Conditions: ioctl[0]},
				{Name: "ioctl", Conditions: ioctl[1]},
			}},
		},
	}
}

// lowWordEquals matches when the low 32 bits of argument arg are exactly v, whatever the high
// 32 bits hold: every bit of v is set and no other low bit is.
func lowWordEquals(arg uint32, v uint32) seccomp.ArgumentConditions {
	var c seccomp.ArgumentConditions
	for bit := uint32(1); bit != 0; bit <<= 1 {
		if v&bit != 0 {
			c = append(c, seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: uint64(bit)})
		}
	}
	return append(c, seccomp.Condition{Argument: arg, Operation: seccomp.BitsNotSet, Value: uint64(^v)})
}

// SeccompProgram returns the filter as the raw sock_filter records bubblewrap's --seccomp reads.
func SeccompProgram() ([]byte, error) {
	return assembleProgram(seccompPolicy())
}

// assembleProgram turns pol into raw sock_filter records.
func assembleProgram(pol seccomp.Policy) ([]byte, error) {
	insns, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	var b bytes.Buffer
	for _, r := range raw {
		binary.Write(&b, binary.NativeEndian, struct {
			Op     uint16
			Jt, Jf uint8
			K      uint32
		}{r.Op, r.Jt, r.Jf, r.K})
	}
	return b.Bytes(), nil
}
