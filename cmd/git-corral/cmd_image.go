package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/vm"
)

// imageVerbs are the verbs of git corral image.
var imageVerbs = []string{"build", "list", "prune", "export", "import"}

func defineImage(fs *pflag.FlagSet) runFunc {
	dir := fs.String("dir", "", "image directory (default $CORRAL_HOME/images)")
	force := fs.Bool("force", false, "build (import) even when the image of this recipe exists")
	jsonOut := fs.Bool("json", false, "print one JSON document (list)")
	arch := fs.String("arch", "", "architecture of the image: amd64 or arm64 (build, export; default: the host's)")
	name := fs.String("image", "", "the image to export, by its hash as image list prints it (default: the current recipe's for --arch)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) == 0 {
			return usageErrorf("image", "image needs one verb: build, list, prune, export FILE or import FILE")
		}
		verb, args := args[0], args[1:]
		want := map[string]int{"build": 0, "list": 0, "prune": 0, "export": 1, "import": 1}
		n, ok := want[verb]
		if !ok {
			return usageErrorf("image", "unknown image verb %q (build, list, prune, export or import)", verb)
		}
		if len(args) != n {
			return usageErrorf("image", "image %s takes %d argument(s), got %d", verb, n, len(args))
		}
		if *arch != "" && verb != "build" && verb != "export" {
			return usageErrorf("image", "--arch goes with image build and export")
		}
		if *name != "" && verb != "export" {
			return usageErrorf("image", "--image goes with image export")
		}
		if *arch == "" {
			*arch = vm.HostArch()
		}
		if err := vm.CheckArch(*arch); err != nil {
			return withCode(exitUsage, err, "use --arch amd64 or --arch arm64")
		}
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return err
		}
		d := *dir
		if d == "" {
			d = h.Images()
		}
		if d, err = filepath.Abs(d); err != nil {
			return err
		}
		switch verb {
		case "build":
			return a.imageBuild(ctx, d, *arch, *force)
		case "list":
			return a.imageList(vm.ImageDirs(d, a.getenv), *jsonOut)
		case "export":
			return a.imageExport(ctx, vm.ImageDirs(d, a.getenv), *name, *arch, args[0])
		case "import":
			return a.imageImport(ctx, args[0], d, *force)
		}
		removed, err := vm.PruneImages(d)
		for _, r := range removed {
			fmt.Fprintf(a.stdout, "removed %s\n", r)
		}
		return err
	}
}

// imageBuild builds the current recipe's image for arch into dir, with progress on stderr and
// the build's own output in dir/build-ARCH.log.
func (a *app) imageBuild(ctx context.Context, dir, arch string, force bool) error {
	if img, err := vm.FindImage([]string{dir}, arch); err == nil && !force {
		fmt.Fprintf(a.stderr, "base image of recipe %s (%s) is already built\n", img.Hash, arch)
		fmt.Fprintf(a.stdout, "%s\n", img.Dir)
		return nil
	}
	if os.Geteuid() != 0 {
		return withHint(fmt.Errorf("build image in %s: building needs root (mmdebstrap, chroot)", dir),
			"run 'sudo git corral image build --dir "+vm.SystemImageDir+"': every user's git corral looks there too; or import one: 'git corral image import FILE'")
	}
	if err := vm.CheckForeignBuild(vm.BinfmtDir, arch); err != nil {
		return withHint(err, "then run 'git corral image build --arch "+arch+"' again")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create image directory %s: %w", dir, err)
	}
	logPath := filepath.Join(dir, "build-"+arch+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create build log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(a.stderr, "building base image (recipe %s, %s) into %s; log: %s\n", vm.RecipeHashFor(arch), arch, dir, logPath)
	p := a.progress()
	img, err := vm.BuildImage(ctx, dir, arch, force, p, logf)
	p.Done("image", err)
	if err != nil {
		return withHint(err, "see "+logPath)
	}
	fmt.Fprintf(a.stdout, "%s\n", img.Dir)
	return nil
}

// imageExport writes the image named (or the current recipe's for arch) to file.
func (a *app) imageExport(ctx context.Context, dirs []string, name, arch, file string) error {
	img, err := vm.FindImage(dirs, arch)
	if name != "" {
		img, err = vm.FindImageFor(dirs, name, arch)
	}
	if err != nil {
		return withHint(err, "'git corral image list' shows the images there are; build one with 'git corral image build --arch "+arch+"'")
	}
	fmt.Fprintf(a.stderr, "exporting image %s (%s, %d MiB) to %s\n", img.Hash, img.Arch, img.Bytes>>20, file)
	if err := vm.ExportImage(ctx, img, file); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s\n", file)
	return nil
}

// imageImport checks file and installs its image into dir.
func (a *app) imageImport(ctx context.Context, file, dir string, force bool) error {
	img, had, err := vm.ImportImage(ctx, file, dir, vm.HostArch(), force)
	switch {
	case errors.Is(err, vm.ErrArch), errors.Is(err, vm.ErrRecipe):
		return err // the error says what to do
	case err != nil:
		return withHint(err, "nothing was installed; 'git corral image import' checks the whole file before it installs it")
	case had:
		fmt.Fprintf(a.stderr, "image %s (%s) is already in %s (--force replaces it)\n", img.Hash, img.Arch, dir)
	default:
		fmt.Fprintf(a.stderr, "imported image %s (%s) into %s\n", img.Hash, img.Arch, img.Dir)
	}
	fmt.Fprintf(a.stdout, "%s\n", img.Dir)
	return nil
}

type imageDoc struct {
	Recipe string     `json:"recipe"`
	Arch   string     `json:"arch"`
	Images []vm.Image `json:"images"`
}

func (a *app) imageList(dirs []string, jsonOut bool) error {
	imgs, err := vm.ListImages(dirs)
	if err != nil {
		return err
	}
	if jsonOut {
		if imgs == nil {
			imgs = []vm.Image{}
		}
		return a.printJSON(imageDoc{Recipe: vm.RecipeHash(), Arch: vm.HostArch(), Images: imgs})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HASH\tARCH\tCURRENT\tSIZE\tBUILT\tDIR")
	for _, i := range imgs {
		arch := i.Arch
		if arch == "" {
			arch = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%dMiB\t%s\t%s\n", i.Hash, arch, i.Current, i.Bytes>>20, i.Built.Format("2006-01-02 15:04"), i.Dir)
	}
	return tw.Flush()
}
