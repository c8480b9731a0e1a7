package vm

import (
	"strings"
	"testing"

	"github.com/lima-vm/lima/pkg/limayaml"
)

// commonDir is a linked worktree's common dir beside testProject's path.
const commonDir = "/home/dev/src/main/.git"

// TestRenderGitMounts: a linked worktree's box mounts the project and the main repository's git
// dir, each at its own path, after Lima fills in its defaults, writable with the project and
// read-only with it; without git mounts (the control) only the project is mounted.
func TestRenderGitMounts(t *testing.T) {
	for _, hostOS := range []string{HostLinux, HostDarwin} {
		for _, ro := range []bool{false, true} {
			o := testOptions(t, hostOS)
			o.Config.ReadonlyProject = ro
			if y := renderLoad(t, o); len(y.Mounts) != 1 {
				t.Errorf("%s: without git mounts, mounts = %+v, want the project only", hostOS, y.Mounts)
			}
			o.GitMounts = []string{commonDir}
			y := renderLoad(t, o)
			if len(y.Mounts) != 2 {
				t.Fatalf("%s: mounts = %+v, want the project and %s", hostOS, y.Mounts, commonDir)
			}
			m := y.Mounts[1]
			if m.Location != commonDir || *m.MountPoint != commonDir || *m.Writable == ro {
				t.Errorf("%s readonly=%v: git mount = %s at %s writable=%v", hostOS, ro, m.Location, *m.MountPoint, *m.Writable)
			}
		}
	}
}

// TestRenderGitMountsRefused is the table of git mounts the template refuses, each with the
// value named in the error.
func TestRenderGitMountsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mounts  []string
		noMount bool
	}{
		{"relative", []string{"main/.git"}, false},
		{"unclean", []string{"/home/dev/src/main/../main/.git"}, false},
		{"newline", []string{"/home/dev/src/main/.git\n- location: /"}, false},
		{"NUL", []string{"/home/dev/src/main/\x00.git"}, false},
		{"twice", []string{commonDir, commonDir}, false},
		{"the project", []string{"/home/dev/src/project"}, false},
		{"inside the project", []string{"/home/dev/src/project/.git"}, false},
		{"holding the project", []string{"/home/dev/src"}, false},
		{"in a box without a mount", []string{commonDir}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, HostLinux)
			o.GitMounts, o.NoProjectMount = tc.mounts, tc.noMount
			_, err := Render(o)
			if err == nil || !strings.Contains(err.Error(), "git mount") {
				t.Fatalf("Render with git mounts %q: %v, want a refusal naming the git mount", tc.mounts, err)
			}
			o.GitMounts, o.NoProjectMount = []string{commonDir}, false
			if _, err := Render(o); err != nil {
				t.Errorf("control: %s refused: %v", commonDir, err)
			}
		})
	}
}

// TestStateCapableGitMounts: a box with a git mount has a device the golden build box did not,
// so it cannot resume a saved state; the same box without one can (the control).
func TestStateCapableGitMounts(t *testing.T) {
	if !stateCapable(Rendered{MountType: limayaml.NINEP}, false) {
		t.Fatal("control: a 9p box without git mounts cannot resume")
	}
	if stateCapable(Rendered{MountType: limayaml.NINEP, GitMounts: 1}, false) {
		t.Error("a box with a git mount resumes the golden saved state")
	}
	if !strings.Contains(noGoldenGitMounts("wt-abc123"), "from scratch") {
		t.Error("the notice does not say the box boots from scratch")
	}
}
