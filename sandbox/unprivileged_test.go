package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// childEnv marks the test binary re-run as an unprivileged user.
const childEnv = "CORRAL_SANDBOX_TEST_UNPRIVILEGED"

// unprivilegedUser is the user the tables are run as again (CI also has corral-ci).
const unprivilegedUser = "nobody"

// TestUnprivileged runs the hostile (with the loader table), limit, default-limit, descriptor,
// allowed, loader, broker and terminal tests again as an unprivileged user, for real: the same
// test binary, copied where that user can run it.
func TestUnprivileged(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("already the unprivileged run")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to user " + unprivilegedUser + "; this run is already unprivileged, and TestHostile ran as it")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Fatalf("runuser (util-linux) is required: %v", err)
	}
	self, _ := os.Executable()
	dir, err := os.MkdirTemp("", "corral-sandbox-unpriv-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "sandbox.test")
	copyFile(t, self, bin)
	home := filepath.Join(dir, "home")
	must(t, os.MkdirAll(home, 0o755))
	must(t, os.Chown(home, 65534, 65534))
	cmd := exec.CommandContext(t.Context(), "runuser", "-u", unprivilegedUser, "--", "/usr/bin/env", "-i",
		"PATH=/usr/bin:/bin", "HOME="+home, "TMPDIR=/tmp", childEnv+"=1",
		bin, "-test.run", "^(TestHostile|TestLimits|TestAllowed|TestBroker|TestTIOCSTI|TestSeccompIoctlLowWord|TestLoaderGranted|TestDefaultLimits|TestInheritedDescriptors)$", "-test.count=1", "-test.v")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tables as %s failed: %v\n%s", unprivilegedUser, err, out)
	}
	for _, name := range []string{"TestHostile", "TestLimits", "TestAllowed", "TestBroker", "TestTIOCSTI", "TestSeccompIoctlLowWord", "TestLoaderGranted", "TestDefaultLimits", "TestInheritedDescriptors"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass as %s:\n%s", name, unprivilegedUser, out)
		}
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("a test skipped as %s:\n%s", unprivilegedUser, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	must(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	must(t, err)
	_, err = io.Copy(dst, src)
	must(t, err)
	must(t, dst.Close())
}
