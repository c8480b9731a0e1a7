package vm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// goldenInstance is the name of the throwaway box a golden base is built in.
func goldenInstance(key string) string { return "corral-golden-" + key[:12] }

// EnsureGolden returns the golden base of spec's guest recipe, building it first when it is
// missing: one box from scratch (the template a box without golden gets, with the guest recipe's
// scripts only and no project mount, then the seal), booted until READY, checked, stopped, and
// its disk flattened into golden.qcow2 (mode 0444). The build box is always deleted.
func (m *Manager) EnsureGolden(ctx context.Context, spec BoxSpec, key string) (Golden, error) {
	unlock, err := m.Lock(ctx, "golden-"+key, func() {
		if spec.Notice != nil {
			spec.Notice("waiting for another git corral building golden base " + key)
		}
	})
	if err != nil {
		return Golden{}, err
	}
	defer unlock()
	if g, err := m.FindGolden(key); err == nil {
		return g, nil
	}
	if spec.Notice != nil {
		spec.Notice("building golden base " + key + " once (a box boots from scratch, about a minute); later boxes with the same guest recipe start from it")
	}
	return m.buildGolden(ctx, spec, key)
}

// buildGolden builds the golden base of key; see EnsureGolden.
func (m *Manager) buildGolden(ctx context.Context, spec BoxSpec, key string) (Golden, error) {
	t0 := time.Now()
	name := goldenInstance(key)
	work := filepath.Join(m.GoldenRoot(), ".golden-src-"+key)
	if err := os.RemoveAll(work); err != nil {
		return Golden{}, err
	}
	if err := m.Home.MkdirAll(work); err != nil {
		return Golden{}, err
	}
	defer os.RemoveAll(work)
	// The build box runs the guest recipe only. The per-box scripts (git shadow, the
	// repository's own) need the project and run in every box. A disk-only base's build box
	// mounts nothing (a mount would leave its entry on the base, see golden_seal.go); a state
	// build box mounts an empty directory of its own at the project's path, so that its devices
	// are those of the boxes that will resume it (golden_state.go), and unmounts it before the
	// state is saved.
	src := spec
	src.Box, src.NoProjectMount, src.Bundle = name, true, spec.Bundle.Recipe()
	src.Config, src.ExtraMounts = recipeConfig(spec.Config), nil // no host mount, no host port
	recipe := scriptHashes(src.Bundle.Scripts)
	probe, err := m.RenderBox(ctx, spec, m.TCG)
	if err != nil {
		return Golden{}, err
	}
	state := spec.GoldenBox(probe).State
	nonce := ""
	if state {
		if nonce, err = newNonce(); err != nil {
			return Golden{}, err
		}
		mnt := filepath.Join(work, "mnt")
		if err := os.Mkdir(mnt, 0o700); err != nil {
			return Golden{}, err
		}
		src.NoProjectMount, src.MountSource = false, mnt
		agents := spec.Agents
		if spec.NoProjectMount {
			src.ProjectDir = buildMountPoint // the clone's own path is its checkout's in the box
			// The base of a checkout's box, with the agent devices (GoldenBox).
			agents = AgentMounts{Store: "store", State: "state"}
		}
		if src.Agents, err = placeholderAgents(work, agents); err != nil {
			return Golden{}, err
		}
		src.Bundle.Scripts = append(src.Bundle.Scripts, stateSealScript(nonce, src.ProjectDir, recipe))
	} else {
		src.Bundle.Scripts = append(src.Bundle.Scripts, goldenSealScript())
	}
	r, err := m.RenderBox(ctx, src, m.TCG)
	if err != nil {
		return Golden{}, err
	}
	if st, _ := m.Inspect(name); st.Exists() {
		_ = m.Delete(ctx, name) // left by a killed build
	}
	defer func() { _ = m.Delete(context.WithoutCancel(ctx), name) }()
	if err := m.Create(ctx, name, r.YAML, spec.Progress); err != nil {
		return Golden{}, err
	}
	saved := ""
	if state {
		if saved, err = m.saveBuildState(ctx, spec, name, key, nonce, work); err != nil {
			return Golden{}, err
		}
	} else {
		if err := m.Start(ctx, name, spec.Progress); err != nil {
			return Golden{}, fmt.Errorf("build golden base %s: %w", key, err)
		}
	}
	if saved == "" {
		// The base must not carry the build box's identity or its mounts; the seal ran as its
		// last provision script (golden_seal.go).
		if err := m.checkGoldenBuild(ctx, name, key); err != nil {
			return Golden{}, err
		}
		if err := m.Stop(ctx, name); err != nil {
			return Golden{}, fmt.Errorf("build golden base %s: %w", key, err)
		}
	}
	st, err := m.Inspect(name)
	if err != nil {
		return Golden{}, err
	}
	tmp := filepath.Join(work, "out")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return Golden{}, err
	}
	g := Golden{Key: key, Dir: tmp, Image: r.Image.Hash, Disk: spec.Config.Disk}
	if err := qemuImg(ctx, "convert", "-O", "qcow2", filepath.Join(st.Dir, "diffdisk"), g.DiskPath()); err != nil {
		return Golden{}, fmt.Errorf("build golden base %s: %w", key, err)
	}
	if err := os.Chmod(g.DiskPath(), 0o444); err != nil {
		return Golden{}, err
	}
	if g.SHA256, err = fileSHA256(ctx, g.DiskPath()); err != nil {
		return Golden{}, err
	}
	if saved != "" {
		if g.LimaVersion = limaVersion(st.Dir); g.LimaVersion == "" {
			return Golden{}, fmt.Errorf("build golden base %s: no Lima version in %s", key, st.Dir)
		}
		if err := os.Rename(saved, g.StatePath()); err != nil {
			return Golden{}, err
		}
		if err := os.Chmod(g.StatePath(), 0o444); err != nil {
			return Golden{}, err
		}
		if g.StateSHA256, err = fileSHA256(ctx, g.StatePath()); err != nil {
			return Golden{}, err
		}
		if fi, err := os.Stat(g.StatePath()); err == nil {
			g.StateBytes = fi.Size()
		}
	}
	fi, err := os.Stat(g.DiskPath())
	if err != nil {
		return Golden{}, err
	}
	g.Bytes, g.Built = fi.Size(), time.Now().UTC().Truncate(time.Second)
	g.BuildSeconds = time.Since(t0).Round(100 * time.Millisecond).Seconds()
	if err := writeGoldenMeta(g); err != nil {
		return Golden{}, err
	}
	final := filepath.Join(m.GoldenRoot(), key)
	if err := os.Rename(tmp, final); err != nil {
		return Golden{}, fmt.Errorf("build golden base %s: %w", key, err)
	}
	if err := os.Chmod(final, 0o555); err != nil {
		return Golden{}, err
	}
	g.Dir = final
	return g, nil
}

// CreateFromGolden creates box from its rendered template with its disk as a copy-on-write
// overlay of g. limactl create prepares the instance as for a box from scratch (it copies the
// image to basedisk, and the kernel, initrd and command line); then basedisk and diffdisk are
// replaced by overlays of g. Lima starts a box whose diffdisk exists without touching either
// (EnsureDisk returns early; basedisk is only checked not to be an ISO), so the box boots from g.
// The transient image copy is freed here.
//
// When g has a saved state and the box can resume it (stateCapable), its first start does.
func (m *Manager) CreateFromGolden(ctx context.Context, box string, r Rendered, g Golden, noProjectMount bool, p *Progress) error {
	if err := m.Create(ctx, box, r.YAML, p); err != nil {
		return err
	}
	st, err := m.Inspect(box)
	if err != nil {
		return err
	}
	if err := overlayDisks(ctx, st.Dir, g.DiskPath()); err != nil {
		return fmt.Errorf("create box %s from golden base %s: %w", box, g.Key, err)
	}
	if resumable(g, r, noProjectMount, st.Dir) {
		return planResume(st.Dir, g, noProjectMount)
	}
	return nil
}

// saveBuildState starts the state build box name and saves its running state once its seal says
// it is ready (golden_state.go). It returns the state file in work, or "" when the box's image
// cannot resume (the seal said unsupported: the box then went on to READY, and the base is
// disk-only).
func (m *Manager) saveBuildState(ctx context.Context, spec BoxSpec, name, key, nonce, work string) (string, error) {
	env, err := m.qemuEnv("")
	if err != nil {
		return "", err
	}
	st, err := m.Inspect(name)
	if err != nil {
		return "", err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan error, 1)
	spec.Progress.Phase("boot")
	go func() { started <- m.runWith(sctx, name, spec.Progress, env, "start", "--timeout", "20m", name) }()
	line, err := waitSerial(ctx, filepath.Join(st.Dir, "serial.log"), nonce, started)
	if err != nil {
		return "", fmt.Errorf("build golden base %s: %w", key, err)
	}
	switch line {
	case stateFailedLine:
		return "", fmt.Errorf("build golden base %s: the build box's provisioning failed (serial log: %s)", key, filepath.Join(st.Dir, "serial.log"))
	case stateUnsupportedLine:
		m.logf(name, "golden build box: the image cannot resume a saved state; the base is disk-only")
		if err := <-started; err != nil {
			return "", fmt.Errorf("build golden base %s: %w", key, err)
		}
		return "", nil
	}
	spec.Progress.Phase("save golden state")
	out := filepath.Join(work, GoldenStateFile)
	if err := qmpSaveState(ctx, filepath.Join(st.Dir, "qmp.sock"), out); err != nil {
		return "", fmt.Errorf("build golden base %s: save the build box's state: %w", key, err)
	}
	// QEMU has quit; the host agent follows it, and limactl start returns an error.
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		cancel()
		<-started
	}
	return out, nil
}

// limaVersion returns the Lima version limactl recorded in an instance directory, or "".
func limaVersion(instDir string) string {
	b, err := os.ReadFile(filepath.Join(instDir, "lima-version"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// resumable reports whether a new box in instDir, rendered as r, resumes g's saved state: g has
// one, the box has the build box's devices, the same Lima made both, and CORRAL_NO_GOLDEN_STATE
// is not set.
func resumable(g Golden, r Rendered, noProjectMount bool, instDir string) bool {
	return g.HasState() && stateCapable(r, noProjectMount) && os.Getenv("CORRAL_NO_GOLDEN_STATE") == "" &&
		g.LimaVersion != "" && limaVersion(instDir) == g.LimaVersion
}
