package gitshadow_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/project"
)

// TestBootScript: the shadow script tells the guest guard check which mount
// points to verify, one quoted path per line, and installs gitshadow's own guard; the result is
// shellcheck-clean.
func TestBootScript(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "gc"))
	top := filepath.Join(dir, "it's a repo")
	if out, err := exec.Command("git", "init", "-q", top).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	p, err := project.Find(context.Background(), top)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := gitshadow.Discover(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := plan.BootScript()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range plan.Expectations() {
		q, _ := gitshadow.ShellQuote(e.Path)
		mode := map[bool]string{true: "ro", false: "rw"}[e.ReadOnly]
		if !strings.Contains(s, "printf '%s %s\\n' "+mode+" "+q+"\n") {
			t.Errorf("expectation %s is not written", e.Path)
		}
	}
	if !strings.Contains(s, gitshadow.GuardPath) || !strings.Contains(s, "/run/corral/shadow.expect") {
		t.Error("the guard or the expectations file is missing")
	}
	f := filepath.Join(dir, "s.sh")
	os.WriteFile(f, []byte(s), 0o644)
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Fatalf("shellcheck is needed (scripts/setup.sh installs it): %v", err)
	}
	if out, err := exec.Command("shellcheck", "-s", "sh", f).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}
