package agents

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// tarEntry is one entry of a test tarball; Data fills a regular file.
type tarEntry struct {
	Name, Link, Data string
	Type             byte
	Mode             int64
	Size             int64 // when set, the header's size (for entries that lie)
}

// makeTarball writes entries as a gzip tarball at path.
func makeTarball(t *testing.T, path string, entries []tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Linkname: e.Link, Typeflag: e.Type, Mode: e.Mode}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// benign is a package every hostile row is added to: it extracts cleanly on its own.
var benign = []tarEntry{
	{Name: "package/package.json", Data: `{"name":"x","version":"1.0.0"}`},
	{Name: "package/bin/", Type: tar.TypeDir, Mode: 0o755},
	{Name: "package/bin/run.js", Data: "#!/usr/bin/env node\n", Mode: 0o4755},
	{Name: "package/lib/a/b.js", Data: "module.exports = 1\n"},
	{Name: "package/lib/link.js", Type: tar.TypeSymlink, Link: "a/b.js"},
	{Name: "package/lib/up.js", Type: tar.TypeSymlink, Link: "../bin/run.js"},
	{Name: "package/lib/hard.js", Type: tar.TypeLink, Link: "package/lib/a/b.js"},
}

var small = limits{FileBytes: 1 << 10, TotalBytes: 4 << 10, Entries: 20}

func TestExtractBenign(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "p.tgz")
	makeTarball(t, src, benign)
	dst := filepath.Join(dir, "out")
	os.Mkdir(dst, 0o755)
	if err := extractTarball(src, dst, small); err != nil {
		t.Fatalf("a benign package is refused: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(dst, "lib", "link.js"))
	if err != nil || string(got) != "module.exports = 1\n" {
		t.Errorf("in-tree symlink reads %q, %v", got, err)
	}
	fi, err := os.Stat(filepath.Join(dst, "bin", "run.js"))
	if err != nil || fi.Mode().Perm() != 0o755 || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("bin/run.js mode %v, %v; want 0755 without setuid", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(dst, "package.json")); err != nil {
		t.Errorf("npm's package/ prefix is not dropped: %v", err)
	}
}

// TestExtractHostile is the hostile-archive class: every row is the benign package plus one
// entry, refused with ErrUnsafeArchive and nothing written outside the destination.
func TestExtractHostile(t *testing.T) {
	big := string(bytes.Repeat([]byte("x"), 1<<10+1))
	half := string(bytes.Repeat([]byte("y"), 900))
	many := func(n int) []tarEntry {
		var es []tarEntry
		for i := range n {
			es = append(es, tarEntry{Name: "package/f" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Data: "1"})
		}
		return es
	}
	rows := []struct {
		name  string
		extra []tarEntry
	}{
		{"dot-dot", []tarEntry{{Name: "package/../../escaped", Data: "x"}}},
		{"dot-dot inside", []tarEntry{{Name: "package/lib/../../../escaped", Data: "x"}}},
		{"absolute", []tarEntry{{Name: "/tmp/escaped", Data: "x"}}},
		{"symlink out", []tarEntry{{Name: "package/out", Type: tar.TypeSymlink, Link: "../../escaped"}}},
		{"symlink absolute", []tarEntry{{Name: "package/out", Type: tar.TypeSymlink, Link: "/etc/passwd"}}},
		{"symlink then write through it", []tarEntry{{Name: "package/d", Type: tar.TypeSymlink, Link: ".."}, {Name: "package/d/escaped", Data: "x"}}},
		{"hardlink out", []tarEntry{{Name: "package/h", Type: tar.TypeLink, Link: "/etc/passwd"}}},
		{"hardlink dot-dot", []tarEntry{{Name: "package/h", Type: tar.TypeLink, Link: "package/../../escaped"}}},
		{"hardlink to a link", []tarEntry{{Name: "package/h", Type: tar.TypeLink, Link: "package/lib/link.js"}}},
		{"char device", []tarEntry{{Name: "package/null", Type: tar.TypeChar}}},
		{"block device", []tarEntry{{Name: "package/sda", Type: tar.TypeBlock}}},
		{"fifo", []tarEntry{{Name: "package/fifo", Type: tar.TypeFifo}}},
		{"duplicate overwrites", []tarEntry{{Name: "package/lib/a/b.js", Data: "evil"}}},
		{"huge file", []tarEntry{{Name: "package/huge", Data: big}}},
		{"huge total", []tarEntry{{Name: "package/h1", Data: half}, {Name: "package/h2", Data: half}, {Name: "package/h3", Data: half}, {Name: "package/h4", Data: half}, {Name: "package/h5", Data: half}}},
		{"too many entries", many(20)},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "p.tgz")
			makeTarball(t, src, append(append([]tarEntry{}, benign...), r.extra...))
			dst := filepath.Join(dir, "a", "b", "out")
			os.MkdirAll(dst, 0o755)
			err := extractTarball(src, dst, small)
			if !errors.Is(err, ErrUnsafeArchive) {
				t.Fatalf("got %v, want ErrUnsafeArchive", err)
			}
			for _, p := range []string{filepath.Join(dir, "escaped"), filepath.Join(dir, "a", "escaped"), filepath.Join(dir, "a", "b", "escaped")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was written outside the destination", p)
				}
			}
		})
	}
}

func TestEntryName(t *testing.T) {
	for raw, want := range map[string]string{"package/a/b": "a/b", "package/": "", "./package/x": "x", "other/x": "x"} {
		if got, err := entryName(raw); err != nil || got != want {
			t.Errorf("entryName(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
}
