package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/lima-vm/lima/pkg/limayaml"
	"github.com/lima-vm/lima/pkg/store"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// BoxSpec is what Ensure needs to create or boot one box.
type BoxSpec struct {
	Box        string
	ProjectDir string
	// NoProjectMount boots a box that mounts nothing of the host (clone mode). Ensure refuses
	// to use an existing box whose metadata says it mounts its project.
	NoProjectMount bool
	// MountSource replaces ProjectDir as the host side of the project mount (a golden build box).
	MountSource string
	Config      *policy.Config
	Bundle      provision.Bundle
	// BrokerPort is recorded in a new box's metadata (broker mode).
	BrokerPort int
	// Create allows creating the box when it does not exist.
	Create bool
	// Confirm, when set, is asked before a box is created; false refuses.
	Confirm func() (bool, error)
	// Progress shows the phases of creation and boot.
	Progress *Progress
	// Notice prints one-line notices (software emulation, waiting for a lock).
	Notice func(string)
	// Agents are the box's agent mounts (agentmounts.go); the session sets them for every
	// mount-mode box.
	Agents AgentMounts
	// Golden creates a new box as an overlay of the golden base of its guest recipe (built
	// first when missing) instead of from scratch.
	Golden bool
	// ExtraMounts are the box's checked `mounts` entries (extra.go).
	ExtraMounts []ExtraMount
	// GitMounts are the host directories git needs besides the project (a linked worktree's
	// common dir), mounted writable at their own paths (gitmounts.go).
	GitMounts []string
}

// ErrDeclined is returned when the user answers no to creating a box.
var ErrDeclined = errors.New("box creation declined")

// Rendered is a box's template and what it was made from.
type Rendered struct {
	YAML      []byte
	Hash      string
	Image     Image
	MountType string
	// ExtraMounts counts the template's `mounts` entries: such a box never resumes a golden state.
	ExtraMounts int
	// GitMounts counts the mounts besides the project's; a box with any cannot resume a saved
	// state (stateCapable).
	GitMounts int
	// Cover is true when the box hides paths or keeps box_dirs (provision.CoverScriptName):
	// its cover script fails when run at a golden-state resume (seen on a real box; a boot
	// runs it fine), so such a box boots instead (stateCapable).
	Cover bool
}

// RenderBox renders and validates spec's template the way Ensure would, with tcg as given.
func (m *Manager) RenderBox(ctx context.Context, spec BoxSpec, tcg bool) (Rendered, error) {
	img, err := FindImageFor(ImageDirs(m.Home.Images(), os.Getenv), spec.Config.Image, HostArch())
	if err != nil {
		return Rendered{}, err
	}
	mt := MountTypeLinux(ctx)
	y, err := Render(TemplateOptions{
		HostOS: runtime.GOOS, Arch: limayaml.NewArch(runtime.GOARCH), ProjectDir: spec.ProjectDir,
		NoProjectMount: spec.NoProjectMount, MountSource: spec.MountSource, GitMounts: spec.GitMounts, Config: spec.Config, Bundle: spec.Bundle, Image: img, MountType: mt, TCG: tcg,
		ExtraMounts: spec.ExtraMounts,
		Agents:      spec.Agents,
	})
	if err != nil {
		return Rendered{}, err
	}
	b, err := Marshal(y)
	if err != nil {
		return Rendered{}, err
	}
	warns, err := ValidateWarnings(b, m.Home.BoxTemplate(spec.Box))
	if err != nil {
		return Rendered{}, err
	}
	for _, w := range warns {
		m.logf(spec.Box, "lima's validator warns: %s", w)
	}
	return Rendered{YAML: b, Hash: TemplateHash(b), Image: img, MountType: mt, ExtraMounts: len(spec.ExtraMounts), GitMounts: len(spec.GitMounts),
		Cover: hasScript(spec.Bundle, provision.CoverScriptName)}, nil
}

// DecideTCG runs (or reads) the KVM probe for img and sets m.TCG, printing the one-line notice
// when software emulation is used.
func (m *Manager) DecideTCG(ctx context.Context, img Image, notice func(string)) KVMResult {
	r := ProbeKVM(ctx, img, m.Home.KVMProbe())
	m.TCG = !r.Usable
	if m.TCG && notice != nil {
		notice(fmt.Sprintf("KVM is not usable here (%s): the box runs under software emulation (TCG) and is slower", r.Reason))
	}
	return r
}

// Ensure makes spec's box exist and run, creating it when allowed, under the box lock. It
// returns the running box's state.
func (m *Manager) Ensure(ctx context.Context, spec BoxSpec) (Status, error) {
	unlock, err := m.Lock(ctx, spec.Box, func() {
		if spec.Notice != nil {
			spec.Notice(fmt.Sprintf("waiting for another git corral working on box %s", spec.Box))
		}
	})
	if err != nil {
		return Status{}, err
	}
	defer unlock()
	st, err := m.Inspect(spec.Box)
	if err != nil {
		return Status{}, err
	}
	if st, err = m.sweepHalf(ctx, spec, st); err != nil {
		return Status{}, err
	}
	if err := m.checkMountMode(spec, st); err != nil {
		return Status{}, err
	}
	switch st.Status {
	case store.StatusRunning:
		return st, nil
	case "":
		if err := m.createBox(ctx, spec); err != nil {
			return Status{}, err
		}
		return m.Inspect(spec.Box)
	case store.StatusStopped:
		if meta, err := m.ReadMeta(spec.Box); err == nil {
			m.TCG = meta.TCG
			if meta.TCG && spec.Notice != nil {
				spec.Notice("the box runs under software emulation (TCG, KVM not usable here) and is slower")
			}
		} else if img, err := FindImageFor(ImageDirs(m.Home.Images(), os.Getenv), spec.Config.Image, HostArch()); err == nil {
			m.DecideTCG(ctx, img, spec.Notice)
		}
	default:
		return Status{}, fmt.Errorf("box %s is %s: %v", spec.Box, st.Status, st.Errors)
	}
	err = m.Start(ctx, spec.Box, spec.Progress)
	spec.Progress.Done("box "+spec.Box, err)
	if err != nil {
		return Status{}, err
	}
	return m.Inspect(spec.Box)
}

// create asks, renders, records the creating marker and creates the instance (not booted). What
// is missing (the base image) is said before the user is asked to create anything.
func (m *Manager) create(ctx context.Context, spec BoxSpec) error {
	img, err := m.askCreate(spec)
	if err != nil {
		return err
	}
	m.DecideTCG(ctx, img, spec.Notice)
	r, err := m.RenderBox(ctx, spec, m.TCG)
	if err != nil {
		return err
	}
	meta := Meta{
		Box: spec.Box, Project: spec.ProjectDir, Created: time.Now().UTC().Truncate(time.Second),
		TemplateHash: r.Hash, Image: r.Image.Hash, MountType: r.MountType, TCG: m.TCG, Network: string(spec.Config.Network),
		NoProjectMount: spec.NoProjectMount, BrokerPort: spec.BrokerPort,
		GuestScripts: spec.Bundle.ProductScripts(), State: StateCreating,
		Mounts: spec.Config.Mounts, Ports: spec.Config.Ports, GitMounts: spec.GitMounts,
	}
	// The creating marker goes first, so that no Lima instance of this box exists without it
	// (creating.go).
	if err := m.WriteMeta(meta); err != nil {
		return err
	}
	golden, err := m.createDisk(ctx, spec, r)
	if err != nil {
		spec.Progress.Done("box "+spec.Box, err)
		return err
	}
	meta.Golden = golden
	return m.WriteMeta(meta)
}

// askCreate refuses a creation that is not allowed, says what is missing (the base image), and
// asks; it returns the base image.
func (m *Manager) askCreate(spec BoxSpec) (Image, error) {
	if !spec.Create {
		return Image{}, fmt.Errorf("%w: %s", ErrNoBox, spec.Box)
	}
	img, err := FindImageFor(ImageDirs(m.Home.Images(), os.Getenv), spec.Config.Image, HostArch())
	if err != nil {
		return Image{}, err
	}
	if spec.Confirm != nil {
		ok, err := spec.Confirm()
		if err != nil {
			return Image{}, err
		}
		if !ok {
			return Image{}, ErrDeclined
		}
	}
	return img, nil
}

// ErrMountMode is returned when an existing box's mount mode (its project mounted, or nothing
// mounted for clone mode) is not the one asked for.
var ErrMountMode = errors.New("box mounts its project")

// checkMountMode refuses to hand a box that mounts the host project (or whose metadata cannot
// say) to clone mode: the box would see the host checkout the clone mode keeps from it. It also
// refuses a clone-mode box to mount mode, where the session would look for a project that is
// not there.
func (m *Manager) checkMountMode(spec BoxSpec, st Status) error {
	if !st.Exists() {
		return nil
	}
	meta, err := m.ReadMeta(spec.Box)
	switch {
	case !spec.NoProjectMount:
		if err == nil && meta.NoProjectMount {
			return fmt.Errorf("%w: box %s is a clone-mode box that mounts nothing; mount mode cannot use it", ErrMountMode, spec.Box)
		}
		return nil
	case err != nil:
		return fmt.Errorf("%w: box %s has no readable metadata (%v), so clone mode cannot tell it mounts nothing", ErrMountMode, spec.Box, err)
	case !meta.NoProjectMount:
		return fmt.Errorf("%w: box %s was created with %s mounted, and clone mode needs a box without a mount", ErrMountMode, spec.Box, meta.Project)
	}
	return nil
}

// createDisk creates the box's instance, from its golden base when spec.Golden and the box can
// resume a saved state (QEMU, the project on 9p or nothing mounted: stateCapable), and returns
// the golden key used ("" from scratch). Other boxes (reverse-sshfs, macOS, extra mounts,
// covers) are made from scratch: a base they could only boot from would cost them an extra
// boot and save them none.
func (m *Manager) createDisk(ctx context.Context, spec BoxSpec, r Rendered) (string, error) {
	if !spec.Golden || !stateCapable(r, spec.NoProjectMount) {
		if spec.Golden && r.GitMounts > 0 && spec.Notice != nil {
			spec.Notice(noGoldenGitMounts(spec.Box))
		}
		if spec.Golden && r.Cover && spec.Notice != nil {
			spec.Notice("box " + spec.Box + " hides paths or keeps box_dirs: it boots from scratch instead of resuming a golden state (about a minute more, once)")
		}
		return "", m.Create(ctx, spec.Box, r.YAML, spec.Progress)
	}
	key := GoldenKey(r.Image, spec.Config, spec.Bundle, spec.GoldenBox(r))
	g, err := m.EnsureGolden(ctx, spec, key)
	if err != nil {
		return "", fmt.Errorf("%w (--no-golden or golden = false creates the box from scratch)", err)
	}
	return key, m.CreateFromGolden(ctx, spec.Box, r, g, spec.NoProjectMount, spec.Progress)
}

// GoldenBox is what of spec's box its golden key depends on besides the recipe.
func (spec BoxSpec) GoldenBox(r Rendered) GoldenBox {
	// A box that mounts nothing has the devices of a checkout's box in its base (the agent
	// store and state too): at its resume they are there, empty (emptyMountDevices).
	return GoldenBox{ProjectDir: spec.ProjectDir, BrokerPort: spec.BrokerPort, AgentMounts: spec.Agents.Standard() || spec.NoProjectMount,
		State: stateCapable(r, spec.NoProjectMount) && standardDevices(spec.Agents) && os.Getenv("CORRAL_NO_GOLDEN_STATE") == ""}
}

// hasScript reports whether b has a script named name.
func hasScript(b provision.Bundle, name string) bool {
	for _, sc := range b.Scripts {
		if sc.Name == name {
			return true
		}
	}
	return false
}
