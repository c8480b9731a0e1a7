package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// DoctorEnv is what Doctor looks at.
type DoctorEnv struct {
	Getenv   func(string) string
	ImageDir string // the user's image directory
	Home     string // $CORRAL_HOME, for the disk-space check and the KVM probe cache
}

// minFreeBytes is the disk space a box needs: a copy of the image plus its overlay.
const minFreeBytes = 5 << 30

// Doctor checks every host prerequisite of a box.
func Doctor(ctx context.Context, env DoctorEnv) []Check {
	checks := []Check{checkUser(), checkLimactl(ctx, env.Getenv)}
	checks = append(checks,
		checkTool(ctx, "qemu", "qemu-system-x86_64", "--version", "apt-get install qemu-system-x86"),
		checkTool(ctx, "qemu-img", "qemu-img", "--version", "apt-get install qemu-utils"),
		checkSFTP(),
	)
	img, imgErr := FindImage(ImageDirs(env.ImageDir, env.Getenv))
	if imgErr != nil {
		checks = append(checks, Check{Name: "base image", Status: CheckFail, Detail: imgErr.Error(),
			Fix: "sudo git corral image build --dir " + SystemImageDir})
		checks = append(checks, Check{Name: "kvm", Status: CheckWarn, Detail: "not probed: the probe boots the base image's kernel",
			Fix: "build the base image first"})
	} else {
		checks = append(checks, Check{Name: "base image", Status: CheckOK, Detail: img.Dir})
		checks = append(checks, checkKVM(ctx, img, filepath.Join(env.Home, "kvm-probe.json")))
	}
	return append(checks, checkDisk(env.Home))
}

func checkUser() Check {
	if os.Geteuid() == 0 {
		return Check{Name: "user", Status: CheckFail, Detail: "running as root: limactl refuses root",
			Fix: "run git corral as a normal user, e.g. runuser -u USER -- git corral …"}
	}
	return Check{Name: "user", Status: CheckOK, Detail: fmt.Sprintf("uid %d", os.Geteuid())}
}

func checkLimactl(ctx context.Context, getenv func(string) string) Check {
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
		share := filepath.Join(filepath.Dir(filepath.Dir(p)), "share", "lima", "lima-guestagent.Linux-x86_64")
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

func checkTool(ctx context.Context, name, bin, arg, fix string) Check {
	p, err := exec.LookPath(bin)
	if err != nil {
		return Check{Name: name, Status: CheckFail, Detail: bin + " not found on PATH", Fix: fix}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, arg).Output()
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
