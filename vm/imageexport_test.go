package vm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/internal/exportfile"
)

// exportTestImage builds an image of the current recipe for arch (kernel of kernel's arch) and
// exports it; it returns the export file.
func exportTestImage(t *testing.T, hash, arch, kernel string) string {
	t.Helper()
	dir := t.TempDir()
	d := writeImage(t, dir, hash, arch, kernel)
	must(t, os.WriteFile(filepath.Join(d, "build.log"), []byte("not carried"), 0o644))
	img, err := readImage(d)
	must(t, err)
	dst := filepath.Join(t.TempDir(), "image.corral")
	must(t, ExportImage(t.Context(), img, dst))
	return dst
}

// TestImageExportImportRoundTrip: an exported image imports into a fresh $CORRAL_HOME's image
// store, byte for byte, is found there for its arch, and a second import changes nothing.
func TestImageExportImportRoundTrip(t *testing.T) {
	arch := HostArch()
	src := exportTestImage(t, RecipeHashFor(arch), arch, arch)
	store := filepath.Join(t.TempDir(), "fresh-home", "images")
	img, had, err := ImportImage(t.Context(), src, store, arch, false)
	if err != nil || had {
		t.Fatalf("ImportImage = %+v, %v, %v; want it installed", img, had, err)
	}
	found, err := FindImage([]string{store}, arch)
	if err != nil || found.Dir != filepath.Join(store, RecipeHashFor(arch)) || !found.Current || found.Arch != arch {
		t.Fatalf("FindImage after import = %+v, %v", found, err)
	}
	if _, err := os.Stat(filepath.Join(found.Dir, "build.log")); err == nil {
		t.Errorf("build.log was carried")
	}
	again := filepath.Join(t.TempDir(), "again.corral")
	must(t, ExportImage(t.Context(), found, again))
	a, _ := os.ReadFile(src)
	b, _ := os.ReadFile(again)
	if string(a) != string(b) {
		t.Errorf("re-export of the imported image differs from the export (%d vs %d bytes)", len(a), len(b))
	}
	if _, had, err := ImportImage(t.Context(), src, store, arch, false); err != nil || !had {
		t.Errorf("second import = %v, %v; want it found already there", had, err)
	}
	if left, _ := filepath.Glob(filepath.Join(store, ".import-*")); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}
}

// TestImageImportRefuses: a changed byte, a truncated file, an image of another arch than the
// host's VMs, an unsupported arch, an unknown recipe and a kernel of another arch than the
// metadata says are each refused, naming what and what to do, with nothing installed; the
// control, the same image unchanged, is installed.
func TestImageImportRefuses(t *testing.T) {
	host := HostArch()
	other := ArchARM64
	if host == ArchARM64 {
		other = ArchAMD64
	}
	good := exportTestImage(t, RecipeHashFor(host), host, host)
	b, err := os.ReadFile(good)
	must(t, err)
	variant := func(name string, c []byte) string {
		p := filepath.Join(t.TempDir(), name)
		must(t, os.WriteFile(p, c, 0o644))
		return p
	}
	changed := append([]byte(nil), b...)
	changed[len(b)/2] ^= 1 // inside the disk
	for _, tc := range []struct {
		name, src string
		is        error
		want      []string
	}{
		{"changed byte", variant("changed", changed), exportfile.ErrChanged, []string{ImageDisk, "sha256", "export it again"}},
		{"truncated", variant("cut", b[:len(b)-5000]), exportfile.ErrTruncated, []string{"copy it again"}},
		{"wrong arch", exportTestImage(t, RecipeHashFor(other), other, other), ErrArch, []string{"built for " + other, "run only " + host, "--arch " + host}},
		{"unknown recipe", exportTestImage(t, "0123456789abcdef", host, host), ErrRecipe, []string{"0123456789abcdef", RecipeHashFor(host), "git corral image build"}},
		{"kernel of another arch", exportTestImage(t, RecipeHashFor(host), host, other), ErrArch, []string{"its kernel is not"}},
		{"not a kernel", exportTestImage(t, RecipeHashFor(host), host, "junk"), ErrArch, []string{"its kernel is not"}},
		{"control", good, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			_, _, err := ImportImage(t.Context(), tc.src, store, host, false)
			if tc.is == nil {
				if err != nil {
					t.Fatalf("ImportImage = %v, want the unchanged image installed", err)
				}
				return
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("ImportImage = %v, want %v", err, tc.is)
			}
			for _, w := range append(tc.want, tc.src) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if ents, _ := os.ReadDir(store); len(ents) != 0 {
				t.Errorf("refused import left %v in the store", ents)
			}
		})
	}
	// unsupported arch: the metadata names one no image is built for
	if err := checkImportMeta("f", Image{Hash: "0123456789abcdef", Arch: "riscv64"}, nil, host); !errors.Is(err, ErrArch) || !strings.Contains(err.Error(), "riscv64") {
		t.Errorf("riscv64 image: %v, want ErrArch naming it", err)
	}
	if err := checkImportMeta("f", Image{Hash: "../../etc", Arch: host}, nil, host); !errors.Is(err, exportfile.ErrRefused) {
		t.Errorf("hash ../../etc: %v, want refused", err)
	}
}
