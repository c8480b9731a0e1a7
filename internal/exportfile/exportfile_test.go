package exportfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testTree writes a small tree: a directory, two files (one executable), a link.
func testTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "d", "e"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "d", "big"), []byte(strings.Repeat("0123456789", 300)), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "d", "e", "run"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink("e/run", filepath.Join(root, "d", "ln")))
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// export writes the test tree to a file and returns it.
func export(t *testing.T, links bool) string {
	src, _ := exportTree(t, links)
	return src
}

// exportTree is export, returning the tree written as well.
func exportTree(t *testing.T, links bool) (string, string) {
	t.Helper()
	root := testTree(t)
	skip := func(p string) bool { return !links && p == "d/ln" }
	es, err := Scan(t.Context(), root, links, skip)
	must(t, err)
	dst := filepath.Join(t.TempDir(), "x.corral")
	must(t, Write(t.Context(), dst, "test", map[string]string{"k": "v"}, root, es))
	return dst, root
}

func read(t *testing.T, src string, links bool) (string, error) {
	t.Helper()
	stage := t.TempDir()
	_, err := Read(t.Context(), src, stage, ReadOptions{Kind: "test", AllowLinks: links})
	return stage, err
}

// TestRoundTrip: what is written is read back byte for byte, mode and mtime (the control of
// every refusal below).
func TestRoundTrip(t *testing.T) {
	src, root := exportTree(t, true)
	stage, err := read(t, src, true)
	if err != nil {
		t.Fatalf("Read = %v, want the file accepted", err)
	}
	got, err := Scan(t.Context(), stage, true, nil)
	must(t, err)
	want, err := Scan(t.Context(), root, true, nil)
	must(t, err)
	if len(got) != len(want) || len(got) != 5 {
		t.Fatalf("read back %d entries, want %d (5)", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("entry %d: read back %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestChangedByteRefused flips one byte in every region of the file: the header, a file's
// content, a padding block no entry reads, the trailer and the end-of-archive blocks.
func TestChangedByteRefused(t *testing.T) {
	src := export(t, true)
	b, err := os.ReadFile(src)
	must(t, err)
	content := strings.Index(string(b), "0123456789")
	for name, off := range map[string]int{
		"header":      600,
		"content":     content + 5,
		"padding":     content + 3000 + 10, // after the 3000-byte file, before the next header
		"trailer":     len(b) - TrailerBytes + 512 + 20,
		"end blocks":  len(b) - 100,
		"trailer hdr": len(b) - TrailerBytes + 3,
	} {
		t.Run(name, func(t *testing.T) {
			c := append([]byte(nil), b...)
			c[off] ^= 0x20
			p := filepath.Join(t.TempDir(), "changed.corral")
			must(t, os.WriteFile(p, c, 0o644))
			_, err := read(t, p, true)
			if !errors.Is(err, ErrChanged) && !errors.Is(err, ErrRefused) {
				t.Fatalf("a changed byte at %d (%s): %v, want a refusal", off, name, err)
			}
			t.Log(err)
		})
	}
}

// TestTruncatedRefused cuts the file at several points; each is refused as truncated or
// changed, never accepted.
func TestTruncatedRefused(t *testing.T) {
	src := export(t, true)
	b, err := os.ReadFile(src)
	must(t, err)
	for _, n := range []int{0, 100, 700, len(b) / 2, len(b) - TrailerBytes, len(b) - 1024, len(b) - 1} {
		p := filepath.Join(t.TempDir(), "cut.corral")
		must(t, os.WriteFile(p, b[:n], 0o644))
		_, err := read(t, p, true)
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrChanged) {
			t.Errorf("cut at %d of %d: %v, want a refusal as truncated", n, len(b), err)
		}
	}
	p := filepath.Join(t.TempDir(), "long.corral")
	must(t, os.WriteFile(p, append(append([]byte(nil), b...), make([]byte, 512)...), 0o644))
	if _, err := read(t, p, true); err == nil {
		t.Errorf("bytes after the end were accepted")
	}
}

// TestLinksRefusedUnlessAllowed: a link is exported and read only where the caller allows
// links; a tree without one passes either way (the control).
func TestLinksRefusedUnlessAllowed(t *testing.T) {
	if _, err := Scan(t.Context(), testTree(t), false, nil); !errors.Is(err, ErrRefused) {
		t.Errorf("Scan without links of a tree with one = %v, want ErrRefused", err)
	}
	if _, err := read(t, export(t, true), false); !errors.Is(err, ErrRefused) {
		t.Errorf("Read without links of a file with one = %v, want ErrRefused", err)
	}
	if _, err := read(t, export(t, false), false); err != nil {
		t.Errorf("Read without links of a file without one = %v, want accepted", err)
	}
	fifo := filepath.Join(testTree(t), "fifo")
	must(t, mkfifo(fifo))
	if _, err := Scan(t.Context(), filepath.Dir(fifo), true, nil); !errors.Is(err, ErrRefused) {
		t.Errorf("Scan of a tree with a FIFO = %v, want ErrRefused", err)
	}
}

// TestWrongKindRefused: an image export is not read as an agent export.
func TestWrongKindRefused(t *testing.T) {
	_, err := Read(t.Context(), export(t, true), t.TempDir(), ReadOptions{Kind: "other", AllowLinks: true})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `"test"`) {
		t.Fatalf("Read of another kind = %v, want a refusal naming its kind", err)
	}
}
