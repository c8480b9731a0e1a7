package gitshadow

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/project"
)

// hermetic points git at a config inside dir and fixes author, committer and dates.
func hermetic(t testing.TB, dir string) {
	t.Helper()
	global := filepath.Join(dir, "gitconfig")
	cfg := "[protocol \"file\"]\n\tallow = always\n[safe]\n\tdirectory = *\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(global, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"HOME": dir, "CORRAL_HOME": filepath.Join(dir, ".corral"),
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": global,
		"GIT_AUTHOR_NAME": "Corral Test", "GIT_AUTHOR_EMAIL": "test@example.com",
		"GIT_COMMITTER_NAME": "Corral Test", "GIT_COMMITTER_EMAIL": "test@example.com",
		"GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z",
	} {
		t.Setenv(k, v)
	}
}

// fixture builds the repositories of testdata/fixture.sh in a fresh directory that other users
// can traverse (the namespace tests attack it as an unprivileged user) and returns its root.
func fixture(t testing.TB) string {
	t.Helper()
	root, err := os.MkdirTemp("", "gitshadow-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	hermetic(t, root)
	script, _ := filepath.Abs("testdata/fixture.sh")
	run(t, root, "sh", "-eu", script, root)
	return root
}

// run runs a command and fails the test with its output when it fails.
func run(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// discover finds the project at dir and plans its shadow.
func discover(t testing.TB, dir string) *Plan {
	t.Helper()
	ctx := context.Background()
	p, err := project.Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Discover(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}
