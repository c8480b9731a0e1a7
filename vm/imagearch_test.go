package vm

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kernelBytes is the start of a kernel of arch as its own header shows it: an x86-64 bzImage
// (boot protocol 2.15, XLF_KERNEL_64), or a gzip-compressed arm64 Image as Debian ships it;
// "i386" is a bzImage without the 64-bit flag, anything else is no kernel.
func kernelBytes(t *testing.T, arch string) []byte {
	t.Helper()
	b := make([]byte, 4096)
	switch arch {
	case ArchAMD64, "i386":
		copy(b[0x202:], "HdrS")
		binary.LittleEndian.PutUint16(b[0x206:], 0x020f)
		if arch == ArchAMD64 {
			b[0x236] = 1
		}
	case ArchARM64:
		copy(b[0x38:], "ARM\x64")
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(b)
		zw.Close()
		return z.Bytes()
	default:
		copy(b, "not a kernel")
	}
	return b
}

// writeImage writes a complete image directory dir/hash whose kernel is of kernel's arch and
// whose metadata records arch (none when empty).
func writeImage(t *testing.T, dir, hash, arch, kernel string) string {
	t.Helper()
	d := filepath.Join(dir, hash)
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, ImageDisk), bytes.Repeat([]byte("disk"), 40000), 0o644))
	must(t, os.WriteFile(filepath.Join(d, ImageInitrd), []byte("initrd"), 0o644))
	must(t, os.WriteFile(filepath.Join(d, ImageKernel), kernelBytes(t, kernel), 0o644))
	m := map[string]any{"hash": hash, "bytes": 3, "built": time.Unix(0, 0).UTC()}
	if arch != "" {
		m["arch"] = arch
	}
	b, _ := json.Marshal(m)
	must(t, os.WriteFile(filepath.Join(d, imageMeta), b, 0o644))
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecipeHashCoversArch: the images of one recipe for two architectures have two names.
func TestRecipeHashCoversArch(t *testing.T) {
	if RecipeHashFor(ArchAMD64) == RecipeHashFor(ArchARM64) || RecipeHash() != RecipeHashFor(HostArch()) {
		t.Fatalf("RecipeHashFor(amd64) = %s, (arm64) = %s, RecipeHash() = %s", RecipeHashFor(ArchAMD64), RecipeHashFor(ArchARM64), RecipeHash())
	}
}

// TestKernelArch: the kernel's own header decides; a 32-bit x86 kernel and a file that is no
// kernel prove nothing.
func TestKernelArch(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ kernel, want string }{{ArchAMD64, ArchAMD64}, {ArchARM64, ArchARM64}, {"i386", ""}, {"junk", ""}} {
		p := filepath.Join(dir, tc.kernel)
		must(t, os.WriteFile(p, kernelBytes(t, tc.kernel), 0o644))
		got, err := kernelArch(p)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("kernelArch(%s) = %q, %v; want %q", tc.kernel, got, err, tc.want)
		}
	}
}

// TestLegacyImageArch: an image whose metadata records no arch is treated as the arch its
// kernel proves, and refused when the kernel proves none; an image of another arch named by
// the image key is refused. Each refusal names the image, both arches and the fix; the
// controls pass.
func TestLegacyImageArch(t *testing.T) {
	dir := t.TempDir()
	dirs := []string{dir}
	writeImage(t, dir, "00000000000000a1", "", ArchAMD64)
	writeImage(t, dir, "00000000000000a2", "", ArchARM64)
	writeImage(t, dir, "00000000000000a3", "", "junk")
	writeImage(t, dir, "00000000000000a4", ArchARM64, ArchARM64)
	writeImage(t, dir, "00000000000000a5", ArchAMD64, ArchAMD64)
	for _, tc := range []struct {
		name, vm string
		want     []string // nil: accepted
	}{
		{"00000000000000a1", ArchAMD64, nil},
		{"00000000000000a5", ArchAMD64, nil},
		{"00000000000000a2", ArchAMD64, []string{"built for arm64", "VM is amd64", "--arch amd64", "00000000000000a2"}},
		{"00000000000000a4", ArchAMD64, []string{"built for arm64", "VM is amd64"}},
		{"00000000000000a1", ArchARM64, []string{"built for amd64", "VM is arm64", "--arch arm64"}},
		{"00000000000000a4", ArchARM64, nil},
		{"00000000000000a3", ArchAMD64, []string{"records no architecture", "neither an x86-64 bzImage nor an arm64 Image", "--arch amd64"}},
	} {
		img, err := FindImageFor(dirs, tc.name, tc.vm)
		if tc.want == nil {
			if err != nil || img.Arch != tc.vm {
				t.Errorf("%s on %s: %+v, %v; want it accepted", tc.name, tc.vm, img, err)
			}
			continue
		}
		if !errors.Is(err, ErrArch) {
			t.Errorf("%s on %s: %v, want ErrArch", tc.name, tc.vm, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s on %s: error %q lacks %q", tc.name, tc.vm, err, w)
			}
		}
	}
	list, err := ListImages(dirs)
	must(t, err)
	for _, img := range list {
		if img.Hash == "00000000000000a1" && (img.Arch != ArchAMD64 || img.ArchFrom != "kernel header") {
			t.Errorf("legacy amd64 image listed as %+v, want arch amd64 from the kernel header", img)
		}
	}
}

// TestFindImageArch: the current recipe's image is looked up for the VM's arch: an arm64
// build does not serve an amd64 VM.
func TestFindImageArch(t *testing.T) {
	dir := t.TempDir()
	writeImage(t, dir, RecipeHashFor(ArchARM64), ArchARM64, ArchARM64)
	if _, err := FindImage([]string{dir}, ArchAMD64); !errors.Is(err, ErrNoImage) || !strings.Contains(err.Error(), "amd64") {
		t.Errorf("FindImage(amd64) with only arm64 built = %v, want ErrNoImage naming amd64", err)
	}
	if img, err := FindImage([]string{dir}, ArchARM64); err != nil || !img.Current || img.Arch != ArchARM64 {
		t.Errorf("FindImage(arm64) = %+v, %v; want the arm64 image, current", img, err)
	}
}

// TestCheckForeignBuild: a foreign build needs binfmt_misc mounted and the QEMU interpreter
// registered, enabled and with the F flag; each missing piece is named with its fix. The
// controls: the host's own arch needs nothing, a complete registration passes.
func TestCheckForeignBuild(t *testing.T) {
	foreign := ArchARM64
	if HostArch() == ArchARM64 {
		foreign = ArchAMD64
	}
	entry := qemuBinfmt[foreign]
	if err := CheckForeignBuild(filepath.Join(t.TempDir(), "absent"), HostArch()); err != nil {
		t.Errorf("host arch: %v, want nothing needed", err)
	}
	if err := CheckForeignBuild(t.TempDir(), "riscv64"); !errors.Is(err, ErrArch) {
		t.Errorf("riscv64: %v, want ErrArch", err)
	}
	dir := t.TempDir()
	archTest := true
	lookPath = func(p string) (string, error) {
		if p == "arch-test" && archTest {
			return "/usr/bin/arch-test", nil
		}
		return "", errors.New("not found")
	}
	t.Cleanup(func() { lookPath = exec.LookPath })
	for _, tc := range []struct {
		name, status, entry, want string
		noArchTest                bool
	}{
		{"not mounted", "", "", "mount -t binfmt_misc binfmt_misc " + dir, false},
		{"not registered", "enabled\n", "", entry + " is not registered", false},
		{"disabled", "enabled\n", "disabled\ninterpreter /usr/libexec/qemu-binfmt/x\nflags: OCF\n", "echo 1 >", false},
		{"no F flag", "enabled\n", "enabled\ninterpreter /usr/bin/qemu-static\nflags: OC\n", "without the F flag", false},
		{"no arch-test", "enabled\n", "enabled\ninterpreter /usr/libexec/qemu-binfmt/x\nflags: POCF\n", "apt-get install arch-test", true},
		{"control", "enabled\n", "enabled\ninterpreter /usr/libexec/qemu-binfmt/x\nflags: POCF\noffset 0\n", "", false},
	} {
		archTest = !tc.noArchTest
		os.Remove(filepath.Join(dir, "status"))
		os.Remove(filepath.Join(dir, entry))
		if tc.status != "" {
			must(t, os.WriteFile(filepath.Join(dir, "status"), []byte(tc.status), 0o644))
		}
		if tc.entry != "" {
			must(t, os.WriteFile(filepath.Join(dir, entry), []byte(tc.entry), 0o644))
		}
		err := CheckForeignBuild(dir, foreign)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want the build allowed", tc.name, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}
