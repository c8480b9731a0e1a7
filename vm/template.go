package vm

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lima-vm/lima/pkg/limayaml"
	"github.com/sirupsen/logrus"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// Host operating systems a template can be rendered for.
const (
	HostLinux  = "linux"
	HostDarwin = "darwin"
)

// TemplateOptions is everything a box's Lima template is made from.
type TemplateOptions struct {
	// HostOS is HostLinux (vmType qemu) or HostDarwin (vmType vz, virtiofs).
	HostOS string
	// Arch is the guest architecture, a Lima arch name such as "x86_64".
	Arch string
	// ProjectDir is the project's real path, mounted at the same path in the guest unless
	// NoProjectMount is set.
	ProjectDir string
	// NoProjectMount renders a box that mounts nothing of the host (clone mode): the code lives
	// only on the box's own disk.
	NoProjectMount bool
	// MountSource, when set, is the host directory mounted at ProjectDir instead of ProjectDir
	// itself: a golden build box mounts an empty directory of git corral's at the project's
	// path, so that its devices match the boxes resumed from its saved state (golden_state.go).
	MountSource string
	// GitMounts are host directories git needs besides the project, each mounted writable at its
	// own real path: a linked worktree's common dir (gitmounts.go).
	GitMounts []string
	// Config is the effective configuration of the box.
	Config *policy.Config
	// Bundle is the guest provisioning rendered by package provision.
	Bundle provision.Bundle
	// Image is the base image.
	Image Image
	// MountType is the Linux mount type (MountTypeLinux); ignored on macOS.
	MountType string
	// TCG selects software emulation: cpuType max (MACHINE.md).
	TCG bool
	// ExtraMounts are the checked `mounts` entries (extra.go).
	ExtraMounts []ExtraMount
	// Agents are the agent store and state mounts (agentmounts.go); ignored with NoProjectMount.
	Agents AgentMounts
}

// kernelCmdline boots the recipe's bare ext4 root filesystem directly, with the serial console
// of the guest architecture (QEMU's x86 ttyS0, the arm64 virt machine's PL011 ttyAMA0).
func kernelCmdline(arch string) string {
	console := "ttyS0"
	if arch == "aarch64" {
		console = "ttyAMA0"
	}
	return "root=/dev/vda rw console=" + console + " net.ifnames=0"
}

// Render builds the box's Lima template from Lima's own types. It never interpolates text into
// YAML: every value goes into a typed field and Lima's marshaller quotes it.
func Render(o TemplateOptions) (*limayaml.LimaYAML, error) {
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	c := o.Config
	forwards, err := portForwards(c)
	if err != nil {
		return nil, err
	}
	y := &limayaml.LimaYAML{
		OS:         ptr(limayaml.LINUX),
		Arch:       ptr(o.Arch),
		CPUs:       ptr(c.CPUs),
		Memory:     ptr(c.Memory),
		Disk:       ptr(c.Disk),
		Images:     []limayaml.Image{image(o)},
		Mounts:     append(mounts(o), extraMounts(o)...),
		SSH:        limayaml.SSH{LocalPort: ptr(0), LoadDotSSHPubKeys: ptr(false), ForwardAgent: ptr(false), ForwardX11: ptr(false), ForwardX11Trusted: ptr(false)},
		Containerd: limayaml.Containerd{System: ptr(false), User: ptr(false)},
		Video:      limayaml.Video{Display: ptr("none")},
		// The ports entries from 127.0.0.1, then every other guest port ignored (extra.go).
		PortForwards:      forwards,
		HostResolver:      limayaml.HostResolver{Enabled: ptr(c.Network == policy.NetworkFull)},
		PropagateProxyEnv: ptr(false),
		UpgradePackages:   ptr(false),
		Provision:         provisionEntries(o.Bundle),
	}
	switch o.HostOS {
	case HostLinux:
		y.VMType = ptr(limayaml.QEMU)
		y.MountType = ptr(o.MountType)
		if o.Arch == "x86_64" { // an arm64 guest boots through UEFI (qemu-efi-aarch64)
			y.Firmware = limayaml.Firmware{LegacyBIOS: ptr(true)}
		}
		if o.TCG {
			y.CPUType = limayaml.CPUType{o.Arch: "max"}
		}
	case HostDarwin:
		y.VMType = ptr(limayaml.VZ)
		y.MountType = ptr(limayaml.VIRTIOFS)
	}
	return y, nil
}

// mounts is the project mount, or none at all in clone mode (an empty list: Lima adds no
// default mount to a template that names its mounts).
func mounts(o TemplateOptions) []limayaml.Mount {
	if o.NoProjectMount {
		return []limayaml.Mount{}
	}
	src := o.ProjectDir
	if o.MountSource != "" {
		src = o.MountSource
	}
	ms := []limayaml.Mount{{Location: src, MountPoint: ptr(o.ProjectDir), Writable: ptr(!o.Config.ReadonlyProject)}}
	ms = append(ms, o.Agents.limaMounts()...)
	return append(ms, gitMounts(o.GitMounts, !o.Config.ReadonlyProject)...)
}

// checkOptions refuses options Lima would misread or that would widen the box.
func checkOptions(o TemplateOptions) error {
	var errs []error
	if o.HostOS != HostLinux && o.HostOS != HostDarwin {
		errs = append(errs, fmt.Errorf("render template: host OS %q is not %q or %q", o.HostOS, HostLinux, HostDarwin))
	}
	if o.Config == nil {
		return errors.New("render template: no configuration")
	}
	if !filepath.IsAbs(o.ProjectDir) || filepath.Clean(o.ProjectDir) != o.ProjectDir {
		errs = append(errs, fmt.Errorf("render template: project path %q must be absolute and clean", o.ProjectDir))
	}
	if o.MountSource != "" && (!filepath.IsAbs(o.MountSource) || filepath.Clean(o.MountSource) != o.MountSource) {
		errs = append(errs, fmt.Errorf("render template: mount source %q must be absolute and clean", o.MountSource))
	}
	for name, v := range map[string]string{"project path": o.ProjectDir, "mount source": o.MountSource, "image": o.Image.Dir, "memory": o.Config.Memory, "disk": o.Config.Disk} {
		if strings.ContainsAny(v, "\x00\n\r") {
			errs = append(errs, fmt.Errorf("render template: %s %q contains a newline or NUL", name, v))
		}
	}
	// The image's recorded architecture, never a label derived from the host, decides whether
	// this VM can boot it (imagearch.go).
	if limaArch(o.Image.Arch) != o.Arch {
		errs = append(errs, fmt.Errorf("render template: %w", CheckImageArch(o.Image, archFromLima(o.Arch))))
	}
	errs = append(errs, checkGitMounts(o)...)
	if o.HostOS == HostLinux && o.MountType != limayaml.NINEP && o.MountType != limayaml.REVSSHFS && o.MountType != limayaml.VIRTIOFS {
		errs = append(errs, fmt.Errorf("render template: mount type %q is not 9p, reverse-sshfs or virtiofs", o.MountType))
	}
	errs = append(errs, o.Agents.check()...)
	if o.Config.CPUs < 1 {
		errs = append(errs, fmt.Errorf("render template: cpus = %d must be at least 1", o.Config.CPUs))
	}
	errs = append(errs, checkExtraMounts(o)...)
	for i, s := range o.Bundle.Scripts {
		if s.Mode != provision.ModeSystem && s.Mode != provision.ModeUser {
			errs = append(errs, fmt.Errorf("render template: provision script %d %q: mode %q is not system or user", i, s.Name, s.Mode))
		}
		if strings.TrimSpace(s.Body) == "" || strings.ContainsRune(s.Body, 0) {
			errs = append(errs, fmt.Errorf("render template: provision script %d %q is empty or contains NUL", i, s.Name))
		}
	}
	return errors.Join(errs...)
}

// image is the locally built image: disk, kernel and initrd booted directly, each labelled with
// the architecture the image records.
func image(o TemplateOptions) limayaml.Image {
	arch := limaArch(o.Image.Arch)
	img := limayaml.Image{File: limayaml.File{Location: o.Image.Disk(), Arch: arch}}
	img.Kernel = &limayaml.Kernel{File: limayaml.File{Location: o.Image.Kernel(), Arch: arch}, Cmdline: kernelCmdline(arch)}
	img.Initrd = &limayaml.File{Location: o.Image.Initrd(), Arch: arch}
	return img
}

// archFromLima is the image architecture of a Lima arch name, or the name itself.
func archFromLima(a string) string {
	for _, arch := range ImageArches {
		if limaArch(arch) == a {
			return arch
		}
	}
	return a
}

// provisionEntries turns the bundle into Lima provision entries, in order.
func provisionEntries(b provision.Bundle) []limayaml.Provision {
	var out []limayaml.Provision
	for _, s := range b.Scripts {
		mode := limayaml.ProvisionModeSystem
		if s.Mode == provision.ModeUser {
			mode = limayaml.ProvisionModeUser
		}
		out = append(out, limayaml.Provision{Mode: mode, Script: s.Body})
	}
	return out
}

// Marshal returns the template as YAML, the bytes limactl is given.
func Marshal(y *limayaml.LimaYAML) ([]byte, error) {
	b, err := limayaml.Marshal(y, false)
	if err != nil {
		return nil, fmt.Errorf("marshal template: %w", err)
	}
	return b, nil
}

// Validate loads b as limactl would (filling Lima's defaults) and runs Lima's own validator.
// path is where the template will be written. Lima reads $LIMA_HOME/_config for defaults, so
// callers set LIMA_HOME first. What Lima warns about is not printed (see ValidateWarnings).
func Validate(b []byte, path string) error {
	_, err := ValidateWarnings(b, path)
	return err
}

// limaLogMu serialises the capture of Lima's logger, which is logrus's process-wide one.
var limaLogMu sync.Mutex

// ValidateWarnings is Validate, returning what Lima warned about as well. Lima's packages log
// through logrus's process-wide logger, which writes to stderr: in-process, their warnings
// would land on the user's terminal between git corral's own progress (issue #30: "provisioning
// scripts should not reference the LIMA_CIDATA variables", three times at a first box). They are
// collected here instead, for the caller to write to the box's log; TestLimaWarnsNothing keeps
// every template git corral renders free of them.
func ValidateWarnings(b []byte, path string) ([]string, error) {
	limaLogMu.Lock()
	defer limaLogMu.Unlock()
	l := logrus.StandardLogger()
	c := &warnCollector{}
	out, hooks := l.Out, l.ReplaceHooks(logrus.LevelHooks{})
	l.SetOutput(io.Discard)
	l.AddHook(c)
	defer func() {
		l.SetOutput(out)
		l.ReplaceHooks(hooks)
	}()
	y, err := limayaml.Load(b, path)
	if err != nil {
		return c.msgs, fmt.Errorf("load template %s: %w", path, err)
	}
	if err := limayaml.Validate(y, false); err != nil {
		return c.msgs, fmt.Errorf("validate template %s: %w", path, err)
	}
	return c.msgs, nil
}

// warnCollector is a logrus hook that keeps the message of every warning or worse.
type warnCollector struct{ msgs []string }

func (c *warnCollector) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel, logrus.WarnLevel}
}

func (c *warnCollector) Fire(e *logrus.Entry) error {
	c.msgs = append(c.msgs, e.Message)
	return nil
}

func ptr[T any](v T) *T { return &v }
