package vm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestProbeKVMLive runs the real probe against the built image when CORRAL_KVM_PROBE_IMAGE names
// an image directory (it boots a kernel, so it is opt-in).
func TestProbeKVMLive(t *testing.T) {
	dir := os.Getenv("CORRAL_KVM_PROBE_IMAGE")
	if dir == "" {
		t.Skip("set CORRAL_KVM_PROBE_IMAGE to an image directory to run the real KVM probe")
	}
	r := ProbeKVM(context.Background(), Image{Dir: dir}, filepath.Join(t.TempDir(), "kvm.json"))
	t.Logf("KVM usable=%v reason=%q in %.1fs", r.Usable, r.Reason, r.Seconds)
	if r.Reason == "" {
		t.Fatal("probe gave no reason")
	}
}
