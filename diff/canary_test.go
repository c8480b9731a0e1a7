package diff

import (
	"slices"
	"testing"
)

// TestCanaryFires is the positive control for every "no driver ran" assertion: the canary the
// test repositories arm really does fire when git itself runs its drivers.
func TestCanaryFires(t *testing.T) {
	r := newRepo(t, map[string]string{"a.txt": "one\n"})
	r.write("a.txt", "two\n")
	r.rawGit("status", "--porcelain")
	r.rawGit("diff")
	r.rawGit("add", "a.txt")
	fired := r.canaryFired()
	for _, want := range []string{"fsmonitor", "diffcmd", "clean", "hook-post-index-change"} {
		if !slices.Contains(fired, want) {
			t.Errorf("canary %q did not fire under plain git (fired: %v): the canary proves nothing", want, fired)
		}
	}
}
