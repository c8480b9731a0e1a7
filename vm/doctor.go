package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LimaPatchesFile, beside the guest agent under <prefix>/share/lima, holds the sha256 of the
// patches scripts/build-lima.sh applied to the pinned Lima (scripts/lima-patches/).
const LimaPatchesFile = "corral-patches.sha256"

// PinnedLimaVersion is the Lima version git corral is built and tested against.
const PinnedLimaVersion = "1.2.2"

// Check statuses.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// Check is one host prerequisite and, when it does not hold, how to fix it.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorEnv is what Doctor looks at. GOOS, GOARCH, LookPath and Output default to this host's
// and this process's; tests inject another host (a Mac) and its tools.
type DoctorEnv struct {
	Getenv   func(string) string
	ImageDir string // the user's image directory
	Home     string // $CORRAL_HOME, for the disk-space check and the KVM probe cache
	// GOOS and GOARCH are the host's operating system (HostLinux or HostDarwin) and
	// architecture; the box's VM runs that architecture.
	GOOS, GOARCH string
	// LookPath finds a program on PATH; Output runs one and returns its standard output.
	LookPath func(string) (string, error)
	Output   func(ctx context.Context, name string, args ...string) ([]byte, error)
	// Agents lists the verified agent versions of the host's store for this host's guests
	// ("name@version"); nil skips the check.
	Agents func() ([]string, error)
}

func (env DoctorEnv) withDefaults() DoctorEnv {
	if env.GOOS == "" {
		env.GOOS = runtime.GOOS
	}
	if env.GOARCH == "" {
		env.GOARCH = runtime.GOARCH
	}
	if env.LookPath == nil {
		env.LookPath = exec.LookPath
	}
	if env.Output == nil {
		env.Output = func(ctx context.Context, name string, args ...string) ([]byte, error) {
			return exec.CommandContext(ctx, name, args...).Output()
		}
	}
	return env
}

// minFreeBytes is the disk space a box needs: a copy of the image plus its overlay.
const minFreeBytes = 5 << 30

// Doctor checks every host prerequisite of a box, for a Linux host (QEMU) or a Mac (vz). What
// a host lacks to run boxes offline (an image for its architecture, an agent bundle) is decided
// from local state only, never by reaching a mirror or registry.
func Doctor(ctx context.Context, env DoctorEnv) []Check {
	env = env.withDefaults()
	checks := []Check{checkUser(), checkLimactl(ctx, env.Getenv, env.GOARCH)}
	if env.GOOS == HostDarwin {
		checks = append(checks, checkMacOS(ctx, env))
	} else {
		checks = append(checks,
			checkTool(ctx, env, "qemu", qemuSystem(env.GOARCH), "--version", "apt-get install "+qemuPackage(env.GOARCH)),
			checkTool(ctx, env, "qemu-img", "qemu-img", "--version", "apt-get install qemu-utils"),
			checkSFTP(),
		)
	}
	img, imgCheck := checkImage(env)
	checks = append(checks, imgCheck)
	switch {
	case env.GOOS == HostDarwin:
		// vz: no KVM, no TCG fallback to probe
	case imgCheck.Status != CheckOK:
		checks = append(checks, Check{Name: "kvm", Status: CheckWarn, Detail: "not probed: the probe boots the base image's kernel",
			Fix: "build or import the base image first"})
	default:
		checks = append(checks, checkKVM(ctx, img, filepath.Join(env.Home, "kvm-probe.json")))
	}
	if env.Agents != nil {
		checks = append(checks, checkAgents(env))
	}
	return append(checks, checkDisk(env.Home))
}

// qemuSystem and qemuPackage are the QEMU system emulator of a guest architecture and the Debian
// package that has it.
func qemuSystem(arch string) string {
	if arch == ArchARM64 {
		return "qemu-system-aarch64"
	}
	return "qemu-system-x86_64"
}

func qemuPackage(arch string) string {
	if arch == ArchARM64 {
		return "qemu-system-arm qemu-efi-aarch64"
	}
	return "qemu-system-x86"
}

// checkImage finds the current recipe's image for the host's architecture. The fix on Linux
// is a build (root) or an import; a Mac cannot build one (no root, no mmdebstrap), so its fix
// is an import of an image exported on a Linux host.
func checkImage(env DoctorEnv) (Image, Check) {
	img, err := FindImage(ImageDirs(env.ImageDir, env.Getenv), env.GOARCH)
	if err == nil {
		return img, Check{Name: "base image", Status: CheckOK, Detail: fmt.Sprintf("%s (%s)", img.Dir, img.Arch)}
	}
	imp := fmt.Sprintf("git corral image import FILE, FILE made on a Linux host (any architecture) by 'git corral image export --arch %s FILE'", env.GOARCH)
	fix := "sudo git corral image build --dir " + SystemImageDir + " (needs a Debian mirror), or " + imp
	if env.GOOS == HostDarwin {
		fix = imp
	}
	return Image{}, Check{Name: "base image", Status: CheckFail, Detail: err.Error(), Fix: fix}
}

// checkAgents says whether the agent store holds any verified agent for this host's guests.
func checkAgents(env DoctorEnv) Check {
	have, err := env.Agents()
	c := Check{Name: "agents", Status: CheckOK, Detail: strings.Join(have, ", ")}
	if err != nil {
		c.Status, c.Detail = CheckWarn, err.Error()
	} else if len(have) == 0 {
		c.Status, c.Detail = CheckWarn, "no agent in the store: a session installs one from the npm registry, which an offline host cannot reach"
	}
	if c.Status != CheckOK {
		c.Fix = "git corral agents install claude (needs the npm registry), or git corral agents import FILE, FILE made by 'git corral agents export FILE' on a host that has them"
	}
	return c
}

// checkMacOS checks that the Mac runs Lima's vz driver: macOS 13 or later.
func checkMacOS(ctx context.Context, env DoctorEnv) Check {
	c := Check{Name: "macos", Fix: "upgrade to macOS 13 (Ventura) or later: Lima's vz driver needs it"}
	out, err := env.Output(ctx, "sw_vers", "-productVersion")
	if err != nil {
		c.Status, c.Detail = CheckFail, "sw_vers -productVersion: "+err.Error()
		return c
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n < 13 {
		c.Status, c.Detail = CheckFail, fmt.Sprintf("macOS %q: the vz driver needs 13 or later", v)
		return c
	}
	return Check{Name: "macos", Status: CheckOK, Detail: "macOS " + v + " (vz, virtiofs)"}
}

func checkUser() Check {
	if os.Geteuid() == 0 {
		return Check{Name: "user", Status: CheckFail, Detail: "running as root: limactl refuses root",
			Fix: "run git corral as a normal user, e.g. runuser -u USER -- git corral …"}
	}
	return Check{Name: "user", Status: CheckOK, Detail: fmt.Sprintf("uid %d", os.Geteuid())}
}

func checkLimactl(ctx context.Context, getenv func(string) string, arch string) Check {
	c := Check{Name: "limactl", Fix: "make lima (builds Lima " + PinnedLimaVersion + " into " + DefaultLimaPrefix + ")"}
	p, err := FindLimactl(getenv)
	if err != nil {
		c.Status, c.Detail = CheckFail, err.Error()
		return c
	}
	v, err := LimactlVersion(ctx, p)
	switch {
	case err != nil:
		c.Status, c.Detail = CheckFail, err.Error()
	case v != PinnedLimaVersion:
		c.Status, c.Detail = CheckWarn, fmt.Sprintf("%s is version %s, git corral is tested with %s", p, v, PinnedLimaVersion)
	default:
		c.Status, c.Detail, c.Fix = CheckOK, fmt.Sprintf("%s (%s)", p, v), ""
		share := filepath.Join(filepath.Dir(filepath.Dir(p)), "share", "lima", "lima-guestagent.Linux-"+limaArch(arch))
		if _, err := os.Stat(share); err != nil {
			c.Status, c.Detail, c.Fix = CheckFail, "guest agent missing: "+share, "make lima"
			break
		}
		// scripts/build-lima.sh records the patches it applied (scripts/lima-patches/).
		marker := filepath.Join(filepath.Dir(share), LimaPatchesFile)
		if _, err := os.Stat(marker); err != nil {
			c.Status, c.Fix = CheckWarn, "make lima"
			c.Detail += ": built without git corral's patches (" + marker + " missing): its host agent checks a booting box every 10 s, so each box start is ready up to 10 s late"
		}
	}
	return c
}

func checkTool(ctx context.Context, env DoctorEnv, name, bin, arg, fix string) Check {
	p, err := env.LookPath(bin)
	if err != nil {
		return Check{Name: name, Status: CheckFail, Detail: bin + " not found on PATH", Fix: fix}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := env.Output(ctx, p, arg)
	if err != nil {
		return Check{Name: name, Status: CheckFail, Detail: fmt.Sprintf("%s %s: %v", p, arg, err), Fix: fix}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return Check{Name: name, Status: CheckOK, Detail: first}
}

func checkSFTP() Check {
	for _, p := range []string{"/usr/lib/openssh/sftp-server", "/usr/libexec/sftp-server", "/usr/lib/sftp-server"} {
		if _, err := os.Stat(p); err == nil {
			return Check{Name: "sftp-server", Status: CheckOK, Detail: p}
		}
	}
	return Check{Name: "sftp-server", Status: CheckWarn, Detail: "no sftp-server: reverse-sshfs mounts cannot work (9p mounts do)",
		Fix: "apt-get install openssh-sftp-server"}
}

func checkKVM(ctx context.Context, img Image, cache string) Check {
	r := ProbeKVM(ctx, img, cache)
	if r.Usable {
		return Check{Name: "kvm", Status: CheckOK, Detail: r.Reason}
	}
	return Check{Name: "kvm", Status: CheckWarn, Detail: "not usable: " + r.Reason + "; boxes run under software emulation (TCG), slower",
		Fix: "none needed; for KVM, run on a host whose /dev/kvm boots a stock kernel and add the user to group kvm"}
}

func checkDisk(dir string) Check {
	for d := dir; ; d = filepath.Dir(d) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(d, &st); err == nil {
			free := int64(st.Bavail) * int64(st.Bsize)
			c := Check{Name: "disk space", Status: CheckOK, Detail: fmt.Sprintf("%.1f GiB free in %s", float64(free)/(1<<30), d)}
			if free < minFreeBytes {
				c.Status, c.Fix = CheckFail, "free at least 5 GiB (each box copies the ~0.5 GB image), or move CORRAL_HOME"
			}
			return c
		}
		if d == filepath.Dir(d) {
			return Check{Name: "disk space", Status: CheckWarn, Detail: "cannot stat " + dir}
		}
	}
}
