//go:build linux

// Package seccompfilter assembles the light tier's seccomp filter with
// github.com/elastic/go-seccomp-bpf. Package sandbox does not link it on amd64, where the
// program is assembled once, at build time, into sandbox/seccomp_linux_amd64.go (the library's
// system call tables are 165 KB built by its initialiser at every start, and the assembly
// would be redone at every run for the same bytes); its tests check that file against this
// package, and other architectures call it at run time.
//
// Seccomp rules: a call is judged by the deny list below only if it is a call of the native ABI
// that the filter knows; everything else is refused before the list is consulted:
//   - a call of another architecture (seccomp_data.arch not the host's: i386 through int 0x80
//     or a 32-bit process on x86_64, AArch32 compat on arm64, any unknown value) kills the
//     process. The deny list names native numbers only, so such a call would otherwise pass
//     whatever it is, and a native program never makes one: dying loudly (SIGSYS, as
//     libseccomp does for a bad arch) beats an errno the program was not written to expect;
//   - a number above open_tree_attr's (the last call whose place on the deny list was decided)
//     fails with ENOSYS, as on a kernel without that call, so libc and Go fall back: a call a
//     newer kernel adds is refused until it is reviewed. This also covers x32 numbers (bit
//     0x40000000 on x86_64) and negative ones.
//
// Of the native calls the filter knows, everything is allowed except the calls below, which
// fail with EPERM (clone3 with ENOSYS, so that libc falls back to clone, whose flags the filter
// can see):
//   - debugging and reading other processes: ptrace, process_vm_readv/writev, kcmp;
//   - kernel facilities a sandbox has no business with: bpf, perf_event_open, keyctl, add_key,
//     request_key, userfaultfd, io_uring (its operations bypass seccomp), syslog;
//   - the mount API and namespaces: mount, umount2, pivot_root, the new mount API (with
//     open_tree_attr), setns, unshare, and clone with any CLONE_NEW* flag;
//   - kernel modules, kexec, reboot, swap, accounting, quotas, I/O ports (x86 only);
//   - setting clocks: clock_settime, clock_adjtime, settimeofday, adjtimex;
//   - memfd_create and memfd_secret, so that no program is executed from anonymous memory;
//   - ioctl TIOCSTI and TIOCLINUX on any descriptor, compared on the low 32 bits of the
//     request (the kernel ignores the high half, so an equality on 64 bits could be bypassed).
//
// The deny list is assembled by github.com/elastic/go-seccomp-bpf behind the ABI guard above
// (the library alone refuses x32 numbers with ENOSYS but allows every call of another
// architecture: its program jumps to the default action, allow), as raw sock_filter records.
// bubblewrap loads it without unshare, mount and mount_setattr (Setup), and the
// inside steps load the whole of it over that before the command runs (inside/noexec_linux.go).
package seccompfilter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// DeniedSyscalls fail with EPERM.
var DeniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register", "syslog",
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
	"fspick", "mount_setattr", "open_tree_attr", "setns", "unshare",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "open_by_handle_at",
	"clock_settime", "clock_adjtime", "settimeofday", "adjtimex",
	"memfd_create", "memfd_secret",
}

// DeniedX86Syscalls fail with EPERM where they exist: the I/O port calls, which only x86 has
// (an arm64 table without them must not fail the whole filter).
var DeniedX86Syscalls = []string{"iopl", "ioperm"}

// DeniedNames is DeniedSyscalls and those of DeniedX86Syscalls the native table has.
func DeniedNames() []string {
	names := slices.Clone(DeniedSyscalls)
	if native, err := arch.GetInfo(""); err == nil {
		for _, n := range DeniedX86Syscalls {
			if _, ok := native.SyscallNames[n]; ok {
				names = append(names, n)
			}
		}
	}
	return names
}

// NamespaceFlags are the clone flags that make a new namespace.
const NamespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP |
	unix.CLONE_NEWTIME

// DeniedIoctls are refused on every descriptor.
var DeniedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// Policy is the filter's policy.
func Policy() seccomp.Policy {
	var ioctl []seccomp.ArgumentConditions
	for _, req := range DeniedIoctls {
		ioctl = append(ioctl, lowWordEquals(1, req))
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: DeniedNames()},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.BitsSet, Value: NamespaceFlags}}},
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

// LastKnownSyscall is the last call whose place on the deny list was decided (Linux 6.15);
// every number above its number fails with ENOSYS. Raise it only after reviewing the calls
// added since, on every architecture the sandbox builds for.
const LastKnownSyscall = "open_tree_attr"

// abiGuard refuses what the deny list cannot judge, before it is consulted: a call of another
// architecture kills the process, and a number above LastKnownSyscall's fails with ENOSYS.
func abiGuard(native *arch.Info) ([]bpf.Instruction, error) {
	top, ok := native.SyscallNames[LastKnownSyscall]
	if !ok {
		return nil, fmt.Errorf("the %s system call table has no %s", native.Name, LastKnownSyscall)
	}
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr, compared unsigned
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(top), SkipFalse: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)},
	}, nil
}

// Whole returns the whole filter, the one the command runs under, as raw sock_filter
// records (the format of bubblewrap's --seccomp).
func Whole() ([]byte, error) {
	return assemble(Policy())
}

// assemble turns pol, behind the ABI guard, into raw sock_filter records.
func assemble(pol seccomp.Policy) ([]byte, error) {
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	insns, err := abiGuard(native)
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	policy, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	raw, err := bpf.Assemble(append(insns, policy...))
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

// SetupAllowed are the calls of the whole filter that bubblewrap's setup filter lets through,
// for the exec step's remount (mount only where mount_setattr is missing, before Linux 5.12).
var SetupAllowed = map[string]bool{"unshare": true, "mount": true, "mount_setattr": true}

// Setup returns the filter bubblewrap loads (--seccomp): the whole filter
// (Whole) without SetupAllowed, which the steps load over it before the command runs.
func Setup() ([]byte, error) {
	pol := Policy()
	groups := make([]seccomp.SyscallGroup, 0, len(pol.Syscalls))
	for _, g := range pol.Syscalls {
		var names []string
		for _, n := range g.Names {
			if !SetupAllowed[n] {
				names = append(names, n)
			}
		}
		g.Names = names
		groups = append(groups, g)
	}
	pol.Syscalls = groups
	return assemble(pol)
}
