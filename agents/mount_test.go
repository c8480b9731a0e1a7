package agents

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLauncherFromReadOnlyBoxMount: the store, bind-mounted read-only at BoxMount in a mount
// namespace of its own (as the box mounts it), runs its launcher from PATH, and cannot be
// written there. The control is the same launcher run on the host (TestEnsureInstalls…).
// Root only: mount namespaces need it.
func TestLauncherFromReadOnlyBoxMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace (CI runs the package tests as root)")
	}
	_, s, home := fixture(t, old)
	if _, err := s.Ensure(context.Background(), testAgent, "", nil); err != nil {
		t.Fatal(err)
	}
	script := `set -e
mount -t tmpfs none /opt
mkdir -p ` + BoxMount + `
mount --bind "$1" ` + BoxMount + `
mount -o remount,bind,ro ` + BoxMount + `
PATH=` + BoxBinDir + `:/usr/bin:/bin codex --version
if touch ` + BoxBinDir + `/planted 2>/dev/null; then echo WRITABLE; fi`
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", StoreDir(home)).CombinedOutput()
	if err != nil {
		t.Fatalf("unshare: %v\n%s", err, out)
	}
	want := "node " + BoxMount + "/codex/1.0.0/node_modules/@example/agent/bin/agent.js --version\n"
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("launcher at %s printed %q, want %q", BoxMount, out, want)
	}
	if strings.Contains(string(out), "WRITABLE") {
		t.Error("the read-only store could be written through the box mount")
	}
}
