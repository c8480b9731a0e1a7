package vm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbeKVMLive runs the real probe against the built image when CORRAL_KVM_PROBE_IMAGE names
// an image directory (it boots a kernel, so it is opt-in; scripts/test-suites.sh sets it in CI).
// On a machine without /dev/kvm the probe can only find that out: the test checks it says so and
// falls back to TCG, and logs that the QEMU half did not run. With /dev/kvm, the probe must have
// booted the image's kernel (or said why it could not) and taken measurable time doing it.
func TestProbeKVMLive(t *testing.T) {
	dir := os.Getenv("CORRAL_KVM_PROBE_IMAGE")
	if dir == "" {
		t.Skip("set CORRAL_KVM_PROBE_IMAGE to an image directory to run the real KVM probe")
	}
	img, err := readImage(dir)
	if err != nil {
		t.Fatalf("CORRAL_KVM_PROBE_IMAGE=%q is no complete image: %v", dir, err)
	}
	r := ProbeKVM(context.Background(), img, filepath.Join(t.TempDir(), "kvm.json"))
	t.Logf("KVM usable=%v reason=%q in %.1fs", r.Usable, r.Reason, r.Seconds)
	if r.Reason == "" {
		t.Fatal("probe gave no reason")
	}
	if _, err := os.Stat("/dev/kvm"); err != nil {
		t.Logf("no /dev/kvm here (%v): only the probe's first step ran; the QEMU boot was not tried", err)
		if r.Usable || !strings.Contains(r.Reason, "/dev/kvm") {
			t.Errorf("without /dev/kvm: usable=%v, reason %q: want unusable, naming /dev/kvm", r.Usable, r.Reason)
		}
		return
	}
	if strings.Contains(r.Reason, "cannot open /dev/kvm") {
		t.Logf("/dev/kvm exists but cannot be opened here: the QEMU boot was not tried")
		return
	}
	if r.Seconds <= 0 {
		t.Errorf("the probe says %q after %.2fs: with /dev/kvm it must have booted the kernel", r.Reason, r.Seconds)
	}
}
