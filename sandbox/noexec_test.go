//go:build linux

package sandbox

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// TestPlanExecMounts: exec.allow and the command are mounts of their own outside the system
// directories, read-write only when the nearest grant around them is fs.write, mounted after
// that grant; they and the system directories are the spec's ExecRoots.
func TestPlanExecMounts(t *testing.T) {
	m := &Manifest{Read: []string{"/home/u/proj/vendor"}, Write: []string{"/home/u/proj"},
		Exec: []string{"/home/u/proj/bin", "/home/u/proj/vendor/tool", "/usr/bin/python3", "/opt/x"}}
	h := testHost()
	h.Program = "/home/u/proj/run.sh"
	h.Links["/sbin"] = ""
	p, err := NewPlan(m, h, []string{"./run.sh"})
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(p.Args, " ")
	for _, want := range []string{"--bind /home/u/proj/bin /home/u/proj/bin", "--ro-bind /home/u/proj/vendor/tool /home/u/proj/vendor/tool",
		"--ro-bind /opt/x /opt/x", "--bind /home/u/proj/run.sh /home/u/proj/run.sh", "--cap-add CAP_SYS_ADMIN", "--cap-add CAP_SETPCAP"} {
		if !strings.Contains(argv, want) {
			t.Errorf("bubblewrap's argv lacks %q: %s", want, argv)
		}
	}
	if strings.Contains(argv, "python3") {
		t.Errorf("a program under /usr is mounted again: %s", argv)
	}
	if strings.Index(argv, "--bind /home/u/proj /home/u/proj") > strings.Index(argv, "--bind /home/u/proj/bin") {
		t.Errorf("exec.allow inside a grant is mounted before the grant: %s", argv)
	}
	for _, want := range []string{"/usr", "/sbin", "/home/u/proj/bin", "/home/u/proj/vendor/tool", "/usr/bin/python3", "/opt/x", "/home/u/proj/run.sh"} {
		if !slices.Contains(p.Spec.ExecRoots, want) {
			t.Errorf("ExecRoots %v lack %q", p.Spec.ExecRoots, want)
		}
	}
	if slices.Contains(p.Spec.ExecRoots, "/home/u/proj") || slices.Contains(p.Spec.ExecRoots, "/bin") {
		t.Errorf("ExecRoots %v hold a grant or a symlinked system directory", p.Spec.ExecRoots)
	}
}

// TestSetupFilter: the filter bubblewrap loads is the whole filter behind the same ABI guard,
// but for unshare, mount and mount_setattr, which the exec step's remount needs; the whole
// filter (the control) refuses those, and both refuse every other call the same way.
func TestSetupFilter(t *testing.T) {
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	setup, err := SetupSeccompProgram()
	must(t, err)
	whole, err := SeccompProgram()
	must(t, err)
	vms := map[string]*bpf.VM{"setup": filterVM(t, setup), "whole": filterVM(t, whole)}
	id := uint32(native.ID)
	for _, c := range []struct {
		call         string
		setup, whole uint32
	}{
		{"unshare", retAllow, retEPERM}, {"mount", retAllow, retEPERM}, {"mount_setattr", retAllow, retEPERM},
		{"keyctl", retEPERM, retEPERM}, {"ptrace", retEPERM, retEPERM}, {"setns", retEPERM, retEPERM},
		{"memfd_create", retEPERM, retEPERM}, {"getpid", retAllow, retAllow},
	} {
		nr, ok := native.SyscallNames[c.call]
		if !ok {
			t.Fatalf("the %s table has no %s", native.Name, c.call)
		}
		for name, want := range map[string]uint32{"setup": c.setup, "whole": c.whole} {
			if got := evalFilter(t, vms[name], id, uint32(nr)); got != want {
				t.Errorf("%s filter, native %s: %s, want %s", name, c.call, retName(got), retName(want))
			}
		}
	}
	for name, vm := range vms {
		if got := evalFilter(t, vm, id^1, 0); got != retKill {
			t.Errorf("%s filter, another architecture: %s, want the process killed", name, retName(got))
		}
		if got := evalFilter(t, vm, id, 0x7fffffff); got != retENOSYS {
			t.Errorf("%s filter, an unknown number: %s, want ENOSYS", name, retName(got))
		}
	}
}

// filterVM loads raw sock_filter records into golang.org/x/net/bpf's VM.
func filterVM(t *testing.T, b []byte) *bpf.VM {
	t.Helper()
	raw := make([]bpf.RawInstruction, len(b)/8)
	for i := range raw {
		r := b[8*i:]
		raw[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(r), Jt: r[2], Jf: r[3], K: binary.NativeEndian.Uint32(r[4:])}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("the filter holds an instruction golang.org/x/net/bpf cannot decode")
	}
	vm, err := bpf.NewVM(insns)
	must(t, err)
	return vm
}
