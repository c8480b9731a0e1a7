package vm

// This file is an image's architecture. Rules:
//   - an image records the architecture it was built for (image.json "arch": amd64 or arm64, the
//     names Go and Debian share) and the recipe hash covers it, so the images of one recipe for
//     two architectures are two directories;
//   - a box's VM runs the host's own architecture (HostArch): an image of another is refused,
//     naming the image, both architectures and the command that builds the right one;
//   - an image whose metadata predates the field is treated as the architecture its kernel's
//     own header proves (kernelArch: the x86 boot protocol's 64-bit flag, or the arm64 Image
//     magic), never assumed; a kernel that proves neither leaves the image unusable;
//   - a foreign architecture is built through QEMU user emulation registered with binfmt_misc
//     (CheckForeignBuild says what is missing and how to add it).

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Image architectures.
const (
	ArchAMD64 = "amd64"
	ArchARM64 = "arm64"
)

// ImageArches are the architectures an image can be built for.
var ImageArches = []string{ArchAMD64, ArchARM64}

// ErrArch is wrapped by every refusal of an image for its architecture.
var ErrArch = errors.New("image architecture")

// HostArch is the architecture of a box's VM on this host: its own (Lima's qemu and vz drivers
// run boxes natively; full-system emulation of another architecture is not a box kind).
func HostArch() string { return runtime.GOARCH }

// CheckArch refuses an architecture no image is built for.
func CheckArch(arch string) error {
	for _, a := range ImageArches {
		if arch == a {
			return nil
		}
	}
	return fmt.Errorf("%w %q is not supported (%s)", ErrArch, arch, strings.Join(ImageArches, " or "))
}

// limaArch is Lima's name of an image architecture ("" for one it does not know, so that a
// comparison with a VM's arch never matches by accident).
func limaArch(arch string) string {
	switch arch {
	case ArchAMD64:
		return "x86_64"
	case ArchARM64:
		return "aarch64"
	}
	return ""
}

// CheckImageArch refuses img for a VM of vmArch (Go's name, as HostArch returns it).
func CheckImageArch(img Image, vmArch string) error {
	if img.Arch == vmArch {
		return nil
	}
	if img.Arch == "" {
		return fmt.Errorf("%w: image %s (%s) records no architecture and its kernel proves none (%s); this box's VM is %s: build the image again with 'git corral image build --arch %s'",
			ErrArch, img.Hash, img.Dir, img.ArchFrom, vmArch, vmArch)
	}
	return fmt.Errorf("%w: image %s (%s) is built for %s, but this box's VM is %s: build one for %s with 'git corral image build --arch %s', or import one ('git corral image import FILE')",
		ErrArch, img.Hash, img.Dir, img.Arch, vmArch, vmArch, vmArch)
}

// kernelHeaderBytes is how much of a kernel kernelArch reads (the arm64 magic is at 0x38, the
// x86 setup header ends before 0x240).
const kernelHeaderBytes = 0x240

// kernelArch says which architecture the kernel at path is built for, from its own header: an
// x86 bzImage ("HdrS" at 0x202, boot protocol 2.12 or later) whose xloadflags has
// XLF_KERNEL_64 is amd64; an arm64 Image ("ARM\x64" at 0x38), also gzip-compressed as Debian
// ships it, is arm64. Anything else is an error saying what the header holds.
func kernelArch(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hdr := make([]byte, kernelHeaderBytes)
	n, _ := io.ReadFull(f, hdr)
	hdr = hdr[:n]
	if len(hdr) >= 2 && hdr[0] == 0x1f && hdr[1] == 0x8b {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", err
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			return "", fmt.Errorf("kernel %s: gzip: %w", path, err)
		}
		hdr = make([]byte, kernelHeaderBytes)
		n, _ = io.ReadFull(zr, hdr)
		hdr = hdr[:n]
	}
	if len(hdr) >= 0x240 && string(hdr[0x202:0x206]) == "HdrS" {
		proto := binary.LittleEndian.Uint16(hdr[0x206:])
		if proto >= 0x020c && hdr[0x236]&1 != 0 {
			return ArchAMD64, nil
		}
		return "", fmt.Errorf("kernel %s: an x86 bzImage (boot protocol %#04x) without the 64-bit flag", path, proto)
	}
	if len(hdr) >= 0x3c && bytes.Equal(hdr[0x38:0x3c], []byte("ARM\x64")) {
		return ArchARM64, nil
	}
	return "", fmt.Errorf("kernel %s: neither an x86-64 bzImage nor an arm64 Image header", path)
}

// legacyArch fills img.Arch for metadata without one, from the kernel's header.
func legacyArch(img *Image) {
	arch, err := kernelArch(filepath.Join(img.Dir, ImageKernel))
	if err != nil {
		img.ArchFrom = err.Error()
		return
	}
	img.Arch, img.ArchFrom = arch, "kernel header"
}

// BinfmtDir is where the kernel's binfmt_misc registry is mounted.
const BinfmtDir = "/proc/sys/fs/binfmt_misc"

// qemuBinfmt is the binfmt_misc entry (and the Debian binfmt.d file) of each architecture.
var qemuBinfmt = map[string]string{ArchAMD64: "qemu-x86_64", ArchARM64: "qemu-aarch64"}

// lookPath finds a program on PATH (tests replace it).
var lookPath = exec.LookPath

// CheckForeignBuild says what a build of arch on this host lacks: nothing when arch is the
// host's; otherwise binfmt_misc mounted at dir with arch's QEMU interpreter registered,
// enabled and with the F flag (mmdebstrap's chroot holds no interpreter of its own), and
// arch-test, which mmdebstrap runs before it builds a foreign architecture.
func CheckForeignBuild(dir, arch string) error {
	if err := CheckArch(arch); err != nil {
		return err
	}
	if arch == HostArch() {
		return nil
	}
	entry := qemuBinfmt[arch]
	fix := fmt.Sprintf("apt-get install qemu-user-static, then register it: /usr/lib/systemd/systemd-binfmt %s.conf (or: cat /usr/lib/binfmt.d/%s.conf >%s/register)", entry, entry, dir)
	if _, err := os.Stat(filepath.Join(dir, "status")); err != nil {
		return fmt.Errorf("building an %s image on %s needs QEMU user emulation, but binfmt_misc is not mounted at %s: mount -t binfmt_misc binfmt_misc %s; then %s",
			arch, HostArch(), dir, dir, fix)
	}
	b, err := os.ReadFile(filepath.Join(dir, entry))
	if err != nil {
		return fmt.Errorf("building an %s image on %s needs QEMU user emulation, but %s is not registered in %s: %s", arch, HostArch(), entry, dir, fix)
	}
	if !strings.HasPrefix(string(b), "enabled") {
		return fmt.Errorf("building an %s image: %s/%s is disabled: echo 1 >%s/%s", arch, dir, entry, dir, entry)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if flags, ok := strings.CutPrefix(line, "flags: "); ok && strings.Contains(flags, "F") {
			if _, err := lookPath("arch-test"); err != nil {
				return fmt.Errorf("building an %s image: mmdebstrap needs arch-test for a foreign architecture, and it is not on PATH: apt-get install arch-test", arch)
			}
			return nil
		}
	}
	return fmt.Errorf("building an %s image: %s/%s is registered without the F flag, so a chroot cannot find its interpreter: remove it (echo -1 >%s/%s) and %s", arch, dir, entry, dir, entry, fix)
}
