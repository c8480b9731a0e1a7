//go:build linux

package home

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// bindHelperEnv tells a re-executed test binary that it runs in its own mount namespace.
const bindHelperEnv = "CORRAL_HOME_TEST_BIND_HELPER"

// TestCheckMountBindMount shows the guard compares file identity, not only names: ~/.ssh
// bind-mounted at another path is refused there, while a plain directory beside it is allowed.
// The bind mount is made in a private mount namespace (unshare -m) so the host never sees it.
func TestCheckMountBindMount(t *testing.T) {
	if os.Getenv(bindHelperEnv) == "1" {
		bindHelper(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: bind-mounts ~/.ssh in a private mount namespace (unshare -m)")
	}
	cmd := exec.Command("unshare", "-m", "--propagation", "private", os.Args[0],
		"-test.run=^TestCheckMountBindMount$", "-test.v")
	cmd.Env = append(os.Environ(), bindHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCheckMountBindMount") {
		t.Fatalf("helper in a mount namespace: %v\n%s", err, out)
	}
}

// bindHelper runs inside the namespace.
func bindHelper(t *testing.T) {
	f := newFixture(t)
	keys, plain := f.mkdir(t, filepath.Join(f.root, "keys")), f.mkdir(t, filepath.Join(f.root, "plain"))
	if err := syscall.Mount(filepath.Join(f.home, ".ssh"), keys, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind ~/.ssh on %q: %v", keys, err)
	}
	t.Cleanup(func() { syscall.Unmount(keys, syscall.MNT_DETACH) })
	for _, project := range []bool{true, false} {
		err := f.check(t, keys, project)
		if !errors.Is(err, ErrHostPath) || !strings.Contains(err.Error(), "is the host's SSH directory (~/.ssh)") {
			t.Errorf("check %q (project %v), ~/.ssh bound there: %v, want it refused as ~/.ssh", keys, project, err)
		}
		if err := f.check(t, plain, project); err != nil {
			t.Errorf("check %q (project %v), a plain directory: %v, want it allowed", plain, project, err)
		}
	}
}
