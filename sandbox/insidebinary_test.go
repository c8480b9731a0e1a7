package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInsideBinary: the helper is found in ../lib/git-corral (make install, off PATH) or beside
// git-corral (a build tree); without either, git-corral itself runs the inside steps.
func TestInsideBinary(t *testing.T) {
	root := t.TempDir()
	self := filepath.Join(root, "bin", "git-corral")
	os.MkdirAll(filepath.Dir(self), 0o755)
	if got := InsideBinary(self); got != self {
		t.Errorf("no helper: %q, want git-corral itself", got)
	}
	beside := filepath.Join(root, "bin", HelperName)
	os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755)
	if got := InsideBinary(self); got != beside {
		t.Errorf("helper beside: %q, want %q", got, beside)
	}
	lib := filepath.Join(root, "lib", "git-corral", HelperName)
	os.MkdirAll(filepath.Dir(lib), 0o755)
	os.WriteFile(lib, []byte("#!/bin/sh\n"), 0o755)
	if got := InsideBinary(self); filepath.Clean(got) != lib {
		t.Errorf("installed helper: %q, want %q", got, lib)
	}
}
