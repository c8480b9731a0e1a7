package dispatch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTakes holds the front to runs alone: everything git corral answers otherwise (help, a
// usage error, --box, --stage) stays with git corral, beside a control of each shape that the
// front takes.
func TestTakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"sandbox", "--", "true"}, true},
		{[]string{"sandbox", "true"}, true},
		{[]string{"sandbox", "--manifest", "m.toml", "--", "true"}, true},
		{[]string{"sandbox", "--manifest=m.toml", "--no-landlock", "true", "-h"}, true},
		{[]string{"-C", "dir", "-Cother", "sandbox", "--", "sh", "-c", "x"}, true},
		{[]string{"-C", "sandbox", "sandbox", "true"}, true},

		{nil, false},
		{[]string{"sandbox"}, false},
		{[]string{"sandbox", "--"}, false},
		{[]string{"sandbox", "--manifest"}, false},
		{[]string{"sandbox", "--manifest", "m.toml"}, false},
		{[]string{"sandbox", "-h", "--", "true"}, false},
		{[]string{"sandbox", "--help", "true"}, false},
		{[]string{"sandbox", "--stage", "exec"}, false},
		{[]string{"sandbox", "--no-landlock=true", "true"}, false},
		{[]string{"sandbox", "--manifes", "m", "true"}, false},
		{[]string{"--box", "b", "sandbox", "--", "true"}, false},
		{[]string{"-C"}, false},
		{[]string{"-C", "dir"}, false},
		{[]string{"run", "--", "true"}, false},
		{[]string{"help", "sandbox"}, false},
	} {
		if got := Takes(tc.args); got != tc.want {
			t.Errorf("Takes(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestBeside finds an installed helper first, then a build tree's, and nothing that is not an
// executable file.
func TestBeside(t *testing.T) {
	root := t.TempDir()
	self := filepath.Join(root, "bin", "git-corral")
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	if got := Beside(self, "h"); got != "" {
		t.Fatalf("Beside with no helper = %q, want none", got)
	}
	os.WriteFile(filepath.Join(root, "bin", "h"), []byte("x"), 0o644)
	if got := Beside(self, "h"); got != "" {
		t.Fatalf("Beside with a helper that is not executable = %q, want none", got)
	}
	os.Chmod(filepath.Join(root, "bin", "h"), 0o755)
	if got := Beside(self, "h"); got != filepath.Join(root, "bin", "h") {
		t.Fatalf("Beside in a build tree = %q", got)
	}
	os.MkdirAll(filepath.Join(root, "lib", "git-corral", "h"), 0o755) // a directory is not it
	if got := Beside(self, "h"); got != filepath.Join(root, "bin", "h") {
		t.Fatalf("Beside with a directory in lib = %q", got)
	}
	os.Remove(filepath.Join(root, "lib", "git-corral", "h"))
	os.WriteFile(filepath.Join(root, "lib", "git-corral", "h"), []byte("x"), 0o755)
	if got := Beside(self, "h"); got != filepath.Join(root, "lib", "git-corral", "h") {
		t.Fatalf("Beside installed = %q", got)
	}
}

// TestStage: only exactly 'sandbox --stage NAME' is the inside steps; a run or anything longer
// is not.
func TestStage(t *testing.T) {
	if name, ok := Stage([]string{"sandbox", "--stage", "exec"}); !ok || name != "exec" {
		t.Errorf("Stage(sandbox --stage exec) = %q, %v", name, ok)
	}
	for _, args := range [][]string{
		{"sandbox", "--", "true"},
		{"sandbox", "--stage"},
		{"sandbox", "--stage", "exec", "extra"},
		{"-C", "/tmp", "sandbox", "--stage", "exec"},
		{"run", "--stage", "exec"},
	} {
		if name, ok := Stage(args); ok {
			t.Errorf("Stage(%q) = %q, true: want false", args, name)
		}
	}
}
