//go:build linux

package sandbox

// The seccomp filter's ABI rules, proven on the bytes of SeccompProgram (the whole filter, which
// the inside steps load over bubblewrap's setup filter; TestSetupFilter checks that one): a
// call is allowed only if it is a call of the native ABI (seccomp_data.arch is the host's, the
// number is one the filter's table knows) and not on the deny list. A call of any other
// architecture (i386 through int 0x80, aarch64, arm compat, an unknown arch value) kills the
// process; an x32 number (bit 0x40000000) or a number above the native table fails with ENOSYS.
//
// TestSeccompFilterABI evaluates the filter in golang.org/x/net/bpf's VM on hand-built
// seccomp_data, so it runs on every machine whatever ABIs its kernel has on.
// TestSeccompABILive runs a tiny static x86_64 program making each call, inside the sandbox and,
// as the control, on the host, where the kernel has the ABI on.

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter's answers (SECCOMP_RET_*).
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// x32Bit marks an x32 system call number on x86_64 (__X32_SYSCALL_BIT).
const x32Bit = 0x40000000

// refusedCalls are calls the deny list refuses natively.
var refusedCalls = []string{"keyctl", "ptrace", "mount", "memfd_create", "io_uring_setup",
	"perf_event_open", "userfaultfd", "bpf", "unshare"}

// abiCalls are the calls the foreign-ABI cases make: refusedCalls and getpid, which nothing
// refuses natively.
var abiCalls = append(slices.Clone(refusedCalls), "getpid")

// installedFilter is the whole filter exactly as the inside steps load it, in a BPF interpreter.
func installedFilter(t *testing.T) *bpf.VM {
	t.Helper()
	b, err := SeccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]bpf.RawInstruction, len(b)/8)
	for i := range raw {
		r := b[8*i:]
		raw[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(r), Jt: r[2], Jf: r[3], K: binary.NativeEndian.Uint32(r[4:])}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("the filter holds an instruction golang.org/x/net/bpf cannot decode: %v", insns)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("the filter is not a valid BPF program: %v", err)
	}
	return vm
}

// seccompData is struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]} for the VM. The
// kernel's loads are 32-bit words in native order; the VM loads big-endian, so each word is
// written big-endian at the kernel's offset (a 64-bit argument's low word first on a
// little-endian host, as the kernel lays it out).
func seccompData(auditArch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		lo, hi := uint32(a), uint32(a>>32)
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
			lo, hi = hi, lo
		}
		binary.BigEndian.PutUint32(b[16+8*i:], lo)
		binary.BigEndian.PutUint32(b[16+8*i+4:], hi)
	}
	return b
}

func evalFilter(t *testing.T, vm *bpf.VM, auditArch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	ret, err := vm.Run(seccompData(auditArch, nr, args...))
	if err != nil {
		t.Fatalf("evaluate the filter on arch %#x nr %#x: %v", auditArch, nr, err)
	}
	return uint32(ret)
}

func retName(r uint32) string {
	switch r {
	case retAllow:
		return "allow"
	case retKill:
		return "kill the process"
	case retEPERM:
		return "EPERM"
	case retENOSYS:
		return "ENOSYS"
	}
	return fmt.Sprintf("%#x", r)
}

// abi is one system call ABI a Linux kernel offers.
type abi struct {
	name string
	info *arch.Info
	bit  uint32 // added to every number (x32)
}

var abis = []abi{
	{"i386", arch.I386, 0}, {"x86_64", arch.X86_64, 0}, {"x32", arch.X32, x32Bit},
	{"aarch64", arch.AARCH64, 0}, {"arm", arch.ARM, 0},
}

// TestSeccompFilterABI proves, for every ABI, that the installed filter lets through only
// native calls not on the deny list: another architecture's calls kill the process, x32 and
// unknown numbers fail with ENOSYS; the controls (native getpid, read, … allowed; native keyctl,
// mount, … refused with EPERM) show that the same filter decides native calls as before.
func TestSeccompFilterABI(t *testing.T) {
	vm := installedFilter(t)
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	want := func(what string, got, w uint32) {
		t.Helper()
		if got != w {
			t.Errorf("%s: the filter answers %s, want %s", what, retName(got), retName(w))
		}
	}
	for _, a := range abis {
		if a.info.ID == native.ID && a.bit == 0 {
			continue // the native ABI: the controls below
		}
		w := uint32(retKill) // another architecture
		if a.info.ID == native.ID {
			w = retENOSYS // x32 numbers on x86_64
		}
		for _, name := range abiCalls {
			nr, ok := a.info.SyscallNames[name]
			if !ok {
				t.Fatalf("%s has no %s in the system call table", a.name, name)
			}
			want(fmt.Sprintf("%s %s (arch %#x, nr %#x)", a.name, name, uint32(a.info.ID), uint32(nr)|a.bit),
				evalFilter(t, vm, uint32(a.info.ID), uint32(nr)|a.bit), w)
		}
	}
	getpid := uint32(native.SyscallNames["getpid"])
	for _, id := range []uint32{0, 0xffffffff, uint32(native.ID) ^ 0x80000000 /* __AUDIT_ARCH_64BIT */, uint32(native.ID) ^ 1,
		unix.AUDIT_ARCH_PPC64LE, unix.AUDIT_ARCH_RISCV64, unix.AUDIT_ARCH_S390X, unix.AUDIT_ARCH_ARMEB} {
		want(fmt.Sprintf("unknown arch %#x, native getpid's number", id), evalFilter(t, vm, id, getpid), retKill)
	}

	// The filter knows the calls through open_tree_attr (Linux 6.15) and the table's last one.
	top := native.SyscallNames["open_tree_attr"]
	tableTop := 0
	for nr := range native.SyscallNumbers {
		tableTop = max(tableTop, nr)
	}
	for _, nr := range []uint32{uint32(top) + 1, uint32(top) + 2, uint32(tableTop) + 1, 1000, 0x3fffffff, x32Bit, x32Bit | getpid,
		0x7fffffff, 0x80000000, 0xffffffff} {
		want(fmt.Sprintf("%s number %#x, above open_tree_attr's (%d)", native.Name, nr, top), evalFilter(t, vm, uint32(native.ID), nr), retENOSYS)
	}

	// Controls: the native ABI, decided by the deny list as before.
	for _, name := range []string{"getpid", "read", "write", "openat", "execve", "exit_group", "mmap",
		"landlock_create_ruleset", "removexattrat"} {
		want(fmt.Sprintf("native %s", name), evalFilter(t, vm, uint32(native.ID), uint32(native.SyscallNames[name])), retAllow)
	}
	// open_tree_attr (Linux 6.15) is open_tree with mount attributes: the mount API.
	for _, name := range append(slices.Concat(deniedNames(), refusedCalls), "open_tree_attr") {
		want(fmt.Sprintf("native %s", name), evalFilter(t, vm, uint32(native.ID), uint32(native.SyscallNames[name])), retEPERM)
	}
	clone := uint32(native.SyscallNames["clone"])
	want("native clone(SIGCHLD)", evalFilter(t, vm, uint32(native.ID), clone, uint64(unix.SIGCHLD)), retAllow)
	want("native clone(CLONE_NEWUSER)", evalFilter(t, vm, uint32(native.ID), clone, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM)
	want("native clone3", evalFilter(t, vm, uint32(native.ID), uint32(native.SyscallNames["clone3"])), retENOSYS)
	ioctl := uint32(native.SyscallNames["ioctl"])
	want("native ioctl TIOCGWINSZ", evalFilter(t, vm, uint32(native.ID), ioctl, 0, unix.TIOCGWINSZ), retAllow)
	want("native ioctl TIOCSTI", evalFilter(t, vm, uint32(native.ID), ioctl, 0, unix.TIOCSTI|1<<32), retEPERM)
}

// TestSeccompDenyListTables checks the deny list against the system call tables of both
// architectures the sandbox builds for, on any host: every name on it exists on both (a name
// missing on one fails the filter's assembly there, and the light tier refuses to run), and the
// x86-only names exist on x86_64, so that dropping them elsewhere drops nothing on x86_64.
func TestSeccompDenyListTables(t *testing.T) {
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		for _, name := range slices.Concat(deniedSyscalls, []string{"clone", "clone3", "ioctl", "open_tree_attr"}) {
			if _, ok := a.SyscallNames[name]; !ok {
				t.Errorf("%s has no system call %q: the filter does not assemble there", a.Name, name)
			}
		}
	}
	for _, name := range deniedX86Syscalls {
		if _, ok := arch.X86_64.SyscallNames[name]; !ok {
			t.Errorf("x86_64 has no system call %q", name)
		}
	}
	if runtime.GOARCH == "amd64" && len(deniedNames()) != len(deniedSyscalls)+len(deniedX86Syscalls) {
		t.Errorf("on x86_64 the deny list is %v, want deniedSyscalls and %v", deniedNames(), deniedX86Syscalls)
	}
}

// abiProbe is a tiny static x86_64 program: it makes one system call through entry (int 0x80
// or syscall) with number nr and no arguments (the registers are zero at exec), and exits with
// 0 if the call succeeded, else with its errno.
func abiProbe(entry string, nr uint32) []byte {
	code := []byte{0xb8, byte(nr), byte(nr >> 8), byte(nr >> 16), byte(nr >> 24)} // mov eax, nr
	code = append(code, map[string][]byte{"int80": {0xcd, 0x80}, "syscall": {0x0f, 0x05}}[entry]...)
	code = append(code,
		0x31, 0xff, // xor edi, edi
		0x85, 0xc0, // test eax, eax
		0x79, 0x04, // jns exit
		0x89, 0xc7, // mov edi, eax
		0xf7, 0xdf, // neg edi
		0xb8, 60, 0, 0, 0, // exit: mov eax, SYS_exit
		0x0f, 0x05, // syscall
	)
	const base, hdr = 0x400000, 64 + 56
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, elf.Header64{
		Ident: [16]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)},
		Type:  uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Entry: base + hdr, Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: 1, Shentsize: 64,
	})
	binary.Write(&b, binary.LittleEndian, elf.Prog64{
		Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Vaddr: base, Paddr: base,
		Filesz: uint64(hdr + len(code)), Memsz: uint64(hdr + len(code)), Align: 0x1000,
	})
	b.Write(code)
	return b.Bytes()
}

// exitDesc says how a probe ended: its errno, or the signal that killed it.
func exitDesc(status int) string {
	switch {
	case status == 0:
		return "the call succeeded"
	case status > 128:
		return fmt.Sprintf("killed by %v", syscall.Signal(status-128))
	}
	return fmt.Sprintf("the call failed: %v", syscall.Errno(status))
}

// TestSeccompABILive runs each probe in the sandbox and, as the control, on the host, where the
// call must reach the kernel: the probe exits normally, not with ENOSYS, and not with the errno
// the sandbox answers. A foreign-ABI probe whose control fails shows that this kernel has that
// ABI off: that case is skipped with the reason (TestSeccompFilterABI still proves the filter's
// answer to it).
func TestSeccompABILive(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the live probes are x86_64 programs; on %s TestSeccompFilterABI proves the filter's answers", runtime.GOARCH)
	}
	f := newFixture(t)
	bin := filepath.Join(f.dir, "probes")
	must(t, os.MkdirAll(bin, 0o755))
	x, i386 := arch.X86_64.SyscallNames, arch.I386.SyscallNames
	const ia32Off = "the 32-bit system call entry is off on this kernel (ia32_emulation off: int 0x80 faults, 32-bit programs do not run)"
	sigsys := 128 + int(unix.SIGSYS)
	cases := []struct {
		name, entry string
		nr          uint32
		inside      int    // the sandbox's status: 0, an errno, or 128+signal
		off         string // why a failing control is this kernel's doing; "" fails the test instead
	}{
		{"native getpid", "syscall", uint32(x["getpid"]), 0, ""},
		{"native keyctl", "syscall", uint32(x["keyctl"]), int(unix.EPERM), ""},
		{"native open_tree_attr", "syscall", uint32(x["open_tree_attr"]), int(unix.EPERM), "this kernel has no open_tree_attr (before Linux 6.15)"},
		// file_getattr (Linux 6.17) is numbered above open_tree_attr: a call the filter does not know.
		{"native 468 (file_getattr, unknown to the filter)", "syscall", 468, int(unix.ENOSYS), "this kernel has no system call 468 (before Linux 6.17)"},
		{"i386 getpid (int 0x80)", "int80", uint32(i386["getpid"]), sigsys, ia32Off},
		{"i386 keyctl (int 0x80)", "int80", uint32(i386["keyctl"]), sigsys, ia32Off},
		{"i386 memfd_create (int 0x80)", "int80", uint32(i386["memfd_create"]), sigsys, ia32Off},
		{"x32 getpid", "syscall", x32Bit | uint32(arch.X32.SyscallNames["getpid"]), int(unix.ENOSYS),
			"this kernel has the x32 ABI off (CONFIG_X86_X32_ABI unset, or syscall.x32=n)"},
		{"x32 keyctl", "syscall", x32Bit | uint32(arch.X32.SyscallNames["keyctl"]), int(unix.ENOSYS),
			"this kernel has the x32 ABI off (CONFIG_X86_X32_ABI unset, or syscall.x32=n)"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(bin, fmt.Sprintf("probe%d", i))
			must(t, os.WriteFile(path, abiProbe(c.entry, c.nr), 0o755))
			control := runProbe(t, path)
			reached := control < 128 && control != int(unix.ENOSYS) && control != c.inside
			if c.inside == 0 {
				reached = control == 0
			}
			if !reached {
				if c.off == "" {
					t.Fatalf("control (on the host): %s, want the call to reach the kernel", exitDesc(control))
				}
				t.Skipf("%s: on the host the probe ends with %s, as the sandbox's answer cannot be told apart from it", c.off, exitDesc(control))
			}
			var out bytes.Buffer
			opts := f.options(&Manifest{Exec: []string{bin}}, &out)
			opts.Argv = []string{path}
			res, err := Run(t.Context(), opts)
			if err != nil {
				t.Fatalf("sandbox: %v\n%s", err, out.String())
			}
			if res.Status != c.inside {
				t.Errorf("in the sandbox: %s, want %s (on the host: %s)", exitDesc(res.Status), exitDesc(c.inside), exitDesc(control))
			}
			t.Logf("in the sandbox: %s; on the host: %s", exitDesc(res.Status), exitDesc(control))
		})
	}
}

// runProbe runs the probe at path on the host and returns its status (128+N for signal N).
func runProbe(t *testing.T, path string) int {
	t.Helper()
	err := exec.Command(path).Run()
	if err == nil {
		return 0
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("control (on the host): %v", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
