package vm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// recipeFS is the image recipe: build-image.sh and the lima-init files it installs.
//
//go:embed imagerecipe
var recipeFS embed.FS

// Files of a built image, inside its directory.
const (
	ImageDisk   = "debian-12-lima.qcow2"
	ImageKernel = "vmlinuz"
	ImageInitrd = "initrd.img"
	imageMeta   = "image.json"
)

// SystemImageDir is where a root setup (scripts/setup.sh) keeps a shared image cache that every
// user's git corral also looks in; $CORRAL_SYSTEM_IMAGES moves it.
const SystemImageDir = "/var/cache/git-corral/images"

// Image is one built base image.
type Image struct {
	// Hash is the recipe hash the image was built from (its directory name).
	Hash string `json:"hash"`
	// Dir holds ImageDisk, ImageKernel and ImageInitrd.
	Dir string `json:"dir"`
	// Bytes is the size of the files in Dir.
	Bytes int64 `json:"bytes"`
	// Built is when the build finished.
	Built time.Time `json:"built"`
	// Arch is the architecture the image was built for (amd64, arm64; imagearch.go).
	Arch string `json:"arch"`
	// ArchFrom, for metadata that records no arch, says how Arch was decided (the kernel's
	// header) or why it could not be. Never written.
	ArchFrom string `json:"archFrom,omitempty"`
	// Current is true when Hash is this binary's recipe for Arch.
	Current bool `json:"current"`
}

// Disk, Kernel and Initrd are the paths of the image's files.
func (i Image) Disk() string   { return filepath.Join(i.Dir, ImageDisk) }
func (i Image) Kernel() string { return filepath.Join(i.Dir, ImageKernel) }
func (i Image) Initrd() string { return filepath.Join(i.Dir, ImageInitrd) }

// RecipeHash is the recipe hash of an image for this host's own architecture.
func RecipeHash() string { return RecipeHashFor(HostArch()) }

// RecipeHashFor is the hash of the embedded image recipe built for arch: the architecture, then
// every file's path and content, in path order. A changed script, package list or lima-init file,
// or another architecture, gives a new image.
func RecipeHashFor(arch string) string {
	h := sha256.New()
	fmt.Fprintf(h, "arch\x00%s\x00", arch)
	var paths []string
	_ = fs.WalkDir(recipeFS, "imagerecipe", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	sort.Strings(paths)
	for _, p := range paths {
		b, _ := recipeFS.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ImageDirs returns the directories searched for images: the user's, then the system cache.
func ImageDirs(userDir string, getenv func(string) string) []string {
	sys := getenv("CORRAL_SYSTEM_IMAGES")
	if sys == "" {
		sys = SystemImageDir
	}
	if filepath.Clean(sys) == filepath.Clean(userDir) {
		return []string{userDir}
	}
	return []string{userDir, sys}
}

// ErrNoImage is returned when no image of the current recipe is built.
var ErrNoImage = errors.New("no base image of the current recipe is built")

// FindImage returns the image of the current recipe for arch from the first directory that has
// it.
func FindImage(dirs []string, arch string) (Image, error) {
	want := RecipeHashFor(arch)
	for _, d := range dirs {
		if img, err := readImage(filepath.Join(d, want)); err == nil && img.Arch == arch {
			return img, nil
		}
	}
	return Image{}, fmt.Errorf("%w for %s (recipe %s; looked in %s)", ErrNoImage, arch, want, strings.Join(dirs, ", "))
}

// readImage checks that dir holds a complete image and reads its metadata. Metadata without an
// arch (written before images had one) gets the one its kernel's header proves (legacyArch).
func readImage(dir string) (Image, error) {
	img := Image{Hash: filepath.Base(dir), Dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, imageMeta))
	if err != nil {
		return Image{}, err
	}
	if err := json.Unmarshal(b, &img); err != nil {
		return Image{}, fmt.Errorf("read %s: %w", filepath.Join(dir, imageMeta), err)
	}
	img.Dir, img.ArchFrom = dir, ""
	for _, f := range []string{ImageDisk, ImageKernel, ImageInitrd} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return Image{}, err
		}
	}
	if img.Arch == "" {
		legacyArch(&img)
	}
	img.Current = img.Arch != "" && img.Hash == RecipeHashFor(img.Arch)
	return img, nil
}

// ListImages returns every complete image in dirs.
func ListImages(dirs []string) ([]Image, error) {
	var out []Image
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list images in %s: %w", d, err)
		}
		for _, e := range ents {
			if img, err := readImage(filepath.Join(d, e.Name())); err == nil && e.IsDir() {
				out = append(out, img)
			}
		}
	}
	return out, nil
}

// PruneImages deletes every image in dir that is not of the current recipe (for any
// architecture), and leftovers of interrupted builds. It returns what it removed.
func PruneImages(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("prune images in %s: %w", dir, err)
	}
	keep := map[string]bool{debCacheDir: true}
	for _, a := range ImageArches {
		keep[RecipeHashFor(a)] = true
	}
	var removed []string
	for _, e := range ents {
		if !e.IsDir() || keep[e.Name()] {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("remove image %s: %w", p, err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// debCacheDir keeps downloaded .deb files between builds, inside the image directory.
const debCacheDir = ".debs"

// BuildImage builds the current recipe's image for arch into dir/<hash> (unless it is already
// there and force is false), reporting phases to p and the build's own output to log. It needs
// root (mmdebstrap, chroot) and, for another architecture than the host's, QEMU user emulation
// (CheckForeignBuild).
func BuildImage(ctx context.Context, dir, arch string, force bool, p *Progress, log io.Writer) (Image, error) {
	if err := CheckArch(arch); err != nil {
		return Image{}, err
	}
	hash := RecipeHashFor(arch)
	final := filepath.Join(dir, hash)
	if img, err := readImage(final); err == nil && img.Arch == arch && !force {
		return img, nil
	}
	if os.Geteuid() != 0 {
		return Image{}, errors.New("building the base image needs root (mmdebstrap and chroot)")
	}
	if err := CheckForeignBuild(BinfmtDir, arch); err != nil {
		return Image{}, err
	}
	debs := filepath.Join(dir, debCacheDir, arch)
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return Image{}, fmt.Errorf("create image directory %s: %w", dir, err)
	}
	work, err := os.MkdirTemp(dir, ".build-"+hash+"-")
	if err != nil {
		return Image{}, fmt.Errorf("create build directory in %s: %w", dir, err)
	}
	defer os.RemoveAll(work)
	recipe := filepath.Join(work, "recipe")
	if err := writeRecipe(recipe); err != nil {
		return Image{}, err
	}
	out := filepath.Join(work, "out")
	if err := runRecipe(ctx, recipe, out, debs, arch, p, log); err != nil {
		return Image{}, err
	}
	return finishImage(out, final, hash, arch)
}

// writeRecipe copies the embedded recipe to dir.
func writeRecipe(dir string) error {
	return fs.WalkDir(recipeFS, "imagerecipe", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, strings.TrimPrefix(p, "imagerecipe"))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := recipeFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o755)
	})
}

// runRecipe runs build-image.sh, turning its PHASE lines into progress phases.
func runRecipe(ctx context.Context, recipe, out, debs, arch string, p *Progress, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(recipe, "build-image.sh"))
	cmd.Env = append(os.Environ(), "OUT="+out, "DEBS="+debs, "ARCH="+arch, "DEBIAN_FRONTEND=noninteractive")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			if name, ok := strings.CutPrefix(line, "PHASE "); ok {
				p.Phase(name)
			}
			fmt.Fprintln(log, line)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("build image (build-image.sh): %w", err)
	}
	return nil
}

// finishImage writes the metadata and moves the finished build into place atomically.
func finishImage(out, final, hash, arch string) (Image, error) {
	img := Image{Hash: hash, Arch: arch, Built: time.Now().UTC().Truncate(time.Second), Current: true}
	for _, f := range []string{ImageDisk, ImageKernel, ImageInitrd} {
		fi, err := os.Stat(filepath.Join(out, f))
		if err != nil {
			return Image{}, fmt.Errorf("build image: missing output: %w", err)
		}
		img.Bytes += fi.Size()
	}
	// the recipe installs linux-image-<arch>: prove it did, from the kernel's own header
	if got, err := kernelArch(filepath.Join(out, ImageKernel)); err != nil || got != arch {
		return Image{}, fmt.Errorf("build image for %s: the kernel built is not one (%q, %v)", arch, got, err)
	}
	os.RemoveAll(filepath.Join(out, "debs"))
	b, _ := json.MarshalIndent(img, "", "  ")
	if err := atomicfile.Write(filepath.Join(out, imageMeta), b, 0o644); err != nil {
		return Image{}, err
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return Image{}, err
	}
	if err := os.RemoveAll(final); err != nil {
		return Image{}, fmt.Errorf("replace image %s: %w", final, err)
	}
	if err := os.Rename(out, final); err != nil {
		return Image{}, fmt.Errorf("install image %s: %w", final, err)
	}
	img.Dir = final
	return img, nil
}
