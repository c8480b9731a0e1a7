package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// KVMResult is the answer of the KVM probe.
type KVMResult struct {
	// Usable is true when a guest kernel really booted under KVM.
	Usable bool `json:"usable"`
	// Reason says why KVM is not usable (or how it was shown usable).
	Reason string `json:"reason"`
	// BootID is the host boot the probe ran in; a cached result is reused only within it.
	BootID string `json:"bootID"`
	// Seconds is how long the probe took.
	Seconds float64 `json:"seconds"`
}

// kvmProbeTimeout bounds the probe: a working KVM boots the kernel to its panic in ~1 s.
const kvmProbeTimeout = 15 * time.Second

// ProbeKVM reports whether KVM can run a guest here. /dev/kvm existing is not enough (MACHINE.md:
// a stock kernel hangs under this machine's nested KVM), so it boots the image's kernel under
// QEMU with -accel kvm -cpu host (what Lima asks for) and init=/ that does not exist: a working
// KVM reaches the kernel's "no working init" panic within a second or two. The result is cached
// in cache for the current host boot.
func ProbeKVM(ctx context.Context, img Image, cache string) KVMResult {
	boot := bootID()
	var cached KVMResult
	if b, err := os.ReadFile(cache); err == nil && json.Unmarshal(b, &cached) == nil && cached.BootID == boot && boot != "" {
		return cached
	}
	t0 := time.Now()
	r := probeKVM(ctx, img)
	r.BootID, r.Seconds = boot, time.Since(t0).Round(10*time.Millisecond).Seconds()
	if b, err := json.Marshal(r); err == nil {
		_ = atomicfile.Write(cache, b, 0o600)
	}
	return r
}

func probeKVM(ctx context.Context, img Image) KVMResult {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return KVMResult{Reason: fmt.Sprintf("cannot open /dev/kvm: %v", err)}
	}
	f.Close()
	ctx, cancel := context.WithTimeout(ctx, kvmProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-machine", "q35,accel=kvm", "-cpu", "host", "-m", "256",
		"-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio", "-kernel", img.Kernel(), "-initrd", img.Initrd(),
		"-append", "console=ttyS0 panic=-1 rdinit=/corral-kvm-probe init=/corral-kvm-probe")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	s := out.String()
	switch {
	case strings.Contains(s, "Kernel panic"):
		return KVMResult{Usable: true, Reason: "a guest kernel booted under KVM"}
	case ctx.Err() != nil:
		return KVMResult{Reason: fmt.Sprintf("a guest kernel did not boot under KVM within %s", kvmProbeTimeout)}
	default:
		return KVMResult{Reason: fmt.Sprintf("qemu -accel kvm failed: %v: %s", err, lastLine(s))}
	}
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
