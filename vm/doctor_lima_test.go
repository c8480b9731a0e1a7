package vm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLimactlPatches: a pinned limactl with its guest agent passes doctor only when the
// build recorded git corral's patches; without the record doctor warns and names make lima.
func TestCheckLimactlPatches(t *testing.T) {
	prefix := t.TempDir()
	for _, d := range []string{"bin", "share/lima"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	limactl := filepath.Join(prefix, "bin", "limactl")
	if err := os.WriteFile(limactl, []byte("#!/bin/sh\necho 'limactl version "+PinnedLimaVersion+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, "share/lima/lima-guestagent.Linux-x86_64"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "CORRAL_LIMA_PREFIX" {
			return prefix
		}
		return ""
	}
	c := checkLimactl(context.Background(), getenv, ArchAMD64)
	if c.Status != CheckWarn || !strings.Contains(c.Detail, "patches") || c.Fix != "make lima" {
		t.Fatalf("without the patch record: %+v, want a warning naming the patches and make lima", c)
	}
	if err := os.WriteFile(filepath.Join(prefix, "share/lima", LimaPatchesFile), []byte("abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := checkLimactl(context.Background(), getenv, ArchAMD64); c.Status != CheckOK {
		t.Fatalf("with the patch record (control): %+v, want ok", c)
	}
}
