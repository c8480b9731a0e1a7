// Package casefstest gives tests a case-insensitive directory: a casefs mount over a fresh
// temporary backing directory, unmounted when the test ends.
package casefstest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-corral/git-corral/internal/casefs"
)

// Dir mounts casefs over a new backing directory and returns the mount point. It skips the test
// when the process is not root or there is no /dev/fuse, saying why.
func Dir(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a case-insensitive FUSE filesystem (internal/casefs) with mount(2)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse for the case-insensitive FUSE filesystem: %v", err)
	}
	base, err := os.MkdirTemp("", "casefs-*")
	if err != nil {
		t.Fatal(err)
	}
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := casefs.Mount(context.Background(), backing, mnt)
	if err != nil {
		os.RemoveAll(base)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Unmount(); err != nil {
			t.Error(err) // leave base: removing it would reach into the mount
			return
		}
		os.RemoveAll(base)
	})
	return mnt
}
