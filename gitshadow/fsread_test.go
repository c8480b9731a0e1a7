package gitshadow

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadSmallRefuses: the discovery reader reads a box-written config only when it is a
// regular file of at most maxConfigSize bytes; a symlink (to a readable host file), a FIFO (which
// would block an open without O_NONBLOCK), a directory and an oversized file are refused, each
// within a second. Control: a regular file is read whole, by both readSmall and readRegular.
func TestReadSmallRefuses(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "host-secret")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(secret, []byte("host only\n"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n\tbare = false\n"), 0o644))
	must(os.Symlink(secret, filepath.Join(dir, "link")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "dir"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "big"), []byte(strings.Repeat("x", maxConfigSize+1)), 0o644))

	for _, read := range []struct {
		name string
		fn   func(string) ([]byte, error)
	}{{"readSmall", readSmall}, {"readRegular", readRegular}} {
		b, err := read.fn(filepath.Join(dir, "config"))
		if err != nil || string(b) != "[core]\n\tbare = false\n" {
			t.Errorf("%s(config) = %q, %v: want the whole file (control)", read.name, b, err)
		}
		for _, name := range []string{"link", "fifo", "dir", "big"} {
			done := make(chan struct{})
			var got []byte
			go func() { got, err = read.fn(filepath.Join(dir, name)); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Second):
				t.Fatalf("%s(%s) blocked", read.name, name)
			}
			if err == nil {
				t.Errorf("%s(%s) read %q, want it refused", read.name, name, got)
			}
		}
	}
}
