package vm

// This file carries a base image to a host that cannot build one (no root, no mmdebstrap, no
// Debian mirror: an air-gapped host, a Mac), in the one-file format of internal/exportfile.
// Rules:
//   - an export holds the image's three files and its metadata (the recipe hash, the
//     architecture, when it was built); the image directory's other files are not carried;
//   - an import refuses, before reading the payload, an image whose architecture this host's
//     VM cannot run, whose recipe is not the one this git corral runs for that architecture, or
//     whose hash is not a recipe hash; after reading it, a kernel whose own header is of another
//     architecture than the metadata says;
//   - an import is staged in a directory beside the image store and renamed into place only
//     when every check passed: an image directory is complete or absent.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/git-corral/git-corral/internal/exportfile"
)

// ImageExportKind is the kind of an image export file.
const ImageExportKind = "git-corral-image"

// imageFiles are the files an image export carries.
var imageFiles = []string{ImageDisk, ImageKernel, ImageInitrd}

// recipeHashRE is what a recipe hash looks like (and so what may name an image directory).
var recipeHashRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

// ErrRecipe is wrapped when an imported image is of a recipe this git corral does not run.
var ErrRecipe = errors.New("image recipe")

// ExportImage writes img to dst.
func ExportImage(ctx context.Context, img Image, dst string) error {
	if err := CheckArch(img.Arch); err != nil {
		return fmt.Errorf("export image %s: %w (%s)", img.Hash, err, img.ArchFrom)
	}
	keep := map[string]bool{}
	for _, f := range imageFiles {
		keep[f] = true
	}
	entries, err := exportfile.Scan(ctx, img.Dir, false, func(rel string) bool { return !keep[rel] })
	if err != nil {
		return err
	}
	if len(entries) != len(imageFiles) {
		return fmt.Errorf("export image %s: %s does not hold exactly %v", img.Hash, img.Dir, imageFiles)
	}
	meta := Image{Hash: img.Hash, Arch: img.Arch, Bytes: img.Bytes, Built: img.Built}
	return exportfile.Write(ctx, dst, ImageExportKind, meta, img.Dir, entries)
}

// ImportImage checks the export file src and installs its image into dir (created if need be)
// for a VM of vmArch. It returns the installed image, and whether an image of that recipe
// was there already (then nothing is changed unless force).
func ImportImage(ctx context.Context, src, dir, vmArch string, force bool) (Image, bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Image{}, false, fmt.Errorf("create image directory %s: %w", dir, err)
	}
	stage, err := os.MkdirTemp(dir, ".import-")
	if err != nil {
		return Image{}, false, fmt.Errorf("create staging directory in %s: %w", dir, err)
	}
	defer os.RemoveAll(stage)
	var meta Image
	check := func(h exportfile.Header) error {
		if err := json.Unmarshal(h.Meta, &meta); err != nil {
			return fmt.Errorf("%s: image metadata: %w", src, err)
		}
		return checkImportMeta(src, meta, h.Entries, vmArch)
	}
	if _, err := exportfile.Read(ctx, src, stage, exportfile.ReadOptions{Kind: ImageExportKind, Check: check}); err != nil {
		return Image{}, false, err
	}
	if got, err := kernelArch(filepath.Join(stage, ImageKernel)); err != nil || got != meta.Arch {
		return Image{}, false, fmt.Errorf("%s: its metadata says %s but its kernel is not (%q, %v): %w; export it again from a good image",
			src, meta.Arch, got, err, ErrArch)
	}
	final := filepath.Join(dir, meta.Hash)
	if img, err := readImage(final); err == nil && img.Arch == meta.Arch && !force {
		return img, true, nil
	}
	img := Image{Hash: meta.Hash, Arch: meta.Arch, Bytes: meta.Bytes, Built: meta.Built, Current: true}
	b, _ := json.MarshalIndent(img, "", "  ")
	if err := os.WriteFile(filepath.Join(stage, imageMeta), b, 0o644); err != nil {
		return Image{}, false, err
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return Image{}, false, err
	}
	// replace an incomplete or (with force) present image: move it aside, then the new one in
	old := ""
	if _, err := os.Lstat(final); err == nil {
		old = stage + ".old"
		if err := os.Rename(final, old); err != nil {
			return Image{}, false, fmt.Errorf("replace image %s: %w", final, err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(stage, final); err != nil {
		if old != "" {
			os.Rename(old, final)
		}
		return Image{}, false, fmt.Errorf("install image %s: %w", final, err)
	}
	img, err = readImage(final)
	return img, false, err
}

// checkImportMeta refuses, from the header alone, an image this host cannot use.
func checkImportMeta(src string, meta Image, entries []exportfile.Entry, vmArch string) error {
	if !recipeHashRE.MatchString(meta.Hash) {
		return fmt.Errorf("%s: image hash %q is not a recipe hash (16 hex digits): %w", src, meta.Hash, exportfile.ErrRefused)
	}
	if err := CheckArch(meta.Arch); err != nil {
		return fmt.Errorf("%s: image %s: %w", src, meta.Hash, err)
	}
	if meta.Arch != vmArch {
		return fmt.Errorf("%s: image %s is built for %s, but this host's box VMs are %s and run only %s images; export the image of this host's architecture ('git corral image export --arch %s FILE' on a Linux host that built it) (%w)",
			src, meta.Hash, meta.Arch, vmArch, vmArch, vmArch, ErrArch)
	}
	if want := RecipeHashFor(meta.Arch); meta.Hash != want {
		return fmt.Errorf("%s: image %s (%s) is of a recipe this git corral does not run (it runs recipe %s for %s); export the image from a git corral of this version, or build it here with 'git corral image build' (%w)",
			src, meta.Hash, meta.Arch, want, meta.Arch, ErrRecipe)
	}
	if len(entries) != len(imageFiles) {
		return fmt.Errorf("%s: holds %d files, an image export holds %v: %w", src, len(entries), imageFiles, exportfile.ErrRefused)
	}
	for _, f := range imageFiles {
		if !containsEntry(entries, f) {
			return fmt.Errorf("%s: lacks %s: %w", src, f, exportfile.ErrRefused)
		}
	}
	return nil
}

func containsEntry(es []exportfile.Entry, p string) bool {
	for _, e := range es {
		if e.Path == p && e.Type == exportfile.TypeFile {
			return true
		}
	}
	return false
}
