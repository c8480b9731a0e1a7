package vm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	// The build box runs the guest recipe only and mounts nothing: the per-box scripts (git
	// shadow, the repository's own) need the project and run in every box at its own boots, and a
	// mount would leave the build box's mount entry on the base (see golden_seal.go).
	src := spec
	src.Box, src.NoProjectMount, src.Bundle = name, true, spec.Bundle.Recipe()
	src.Bundle.Scripts = append(src.Bundle.Scripts, goldenSealScript())
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
	if err := m.Start(ctx, name, spec.Progress); err != nil {
		return Golden{}, fmt.Errorf("build golden base %s: %w", key, err)
	}
	// The base must not carry the build box's identity or its mounts; the seal ran as its last
	// provision script (golden_seal.go).
	if err := m.checkGoldenBuild(ctx, name, key); err != nil {
		return Golden{}, err
	}
	if err := m.Stop(ctx, name); err != nil {
		return Golden{}, fmt.Errorf("build golden base %s: %w", key, err)
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
func (m *Manager) CreateFromGolden(ctx context.Context, box string, r Rendered, g Golden, p *Progress) error {
	if err := m.Create(ctx, box, r.YAML, p); err != nil {
		return err
	}
	st, err := m.Inspect(box)
	if err != nil {
		return err
	}
	for _, d := range []string{"basedisk", "diffdisk"} {
		path := filepath.Join(st.Dir, d)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("create box %s from golden base %s: %w", box, g.Key, err)
		}
		if err := qemuImg(ctx, "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", g.DiskPath(), path); err != nil {
			return fmt.Errorf("create box %s from golden base %s: %w", box, g.Key, err)
		}
	}
	return nil
}
