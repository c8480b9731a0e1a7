package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/vm"
)

// imageVerbs are the verbs of git corral image.
var imageVerbs = []string{"build", "list", "prune"}

func defineImage(fs *pflag.FlagSet) runFunc {
	dir := fs.String("dir", "", "image directory (default $CORRAL_HOME/images)")
	force := fs.Bool("force", false, "build even when the image of this recipe exists")
	jsonOut := fs.Bool("json", false, "print one JSON document (list)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) != 1 {
			return usageErrorf("image", "image needs one verb: build, list or prune")
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
		switch args[0] {
		case "build":
			return a.imageBuild(ctx, d, *force)
		case "list":
			return a.imageList(vm.ImageDirs(d, a.getenv), *jsonOut)
		case "prune":
			removed, err := vm.PruneImages(d)
			for _, r := range removed {
				fmt.Fprintf(a.stdout, "removed %s\n", r)
			}
			return err
		}
		return usageErrorf("image", "unknown image verb %q (build, list or prune)", args[0])
	}
}

// imageBuild builds the current recipe's image into dir, with progress on stderr and the
// build's own output in dir/build.log.
func (a *app) imageBuild(ctx context.Context, dir string, force bool) error {
	if img, err := vm.FindImage([]string{dir}); err == nil && !force {
		fmt.Fprintf(a.stderr, "base image of recipe %s is already built\n", img.Hash)
		fmt.Fprintf(a.stdout, "%s\n", img.Dir)
		return nil
	}
	if os.Geteuid() != 0 {
		return withHint(fmt.Errorf("build image in %s: building needs root (debootstrap, chroot)", dir),
			"run 'sudo git corral image build --dir "+vm.SystemImageDir+"': every user's git corral looks there too")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create image directory %s: %w", dir, err)
	}
	logPath := filepath.Join(dir, "build.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create build log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(a.stderr, "building base image (recipe %s) into %s; log: %s\n", vm.RecipeHash(), dir, logPath)
	p := a.progress()
	img, err := vm.BuildImage(ctx, dir, force, p, logf)
	p.Done("image", err)
	if err != nil {
		return withHint(err, "see "+logPath)
	}
	fmt.Fprintf(a.stdout, "%s\n", img.Dir)
	return nil
}

type imageDoc struct {
	Recipe string     `json:"recipe"`
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
		return a.printJSON(imageDoc{Recipe: vm.RecipeHash(), Images: imgs})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HASH\tCURRENT\tSIZE\tBUILT\tDIR")
	for _, i := range imgs {
		fmt.Fprintf(tw, "%s\t%v\t%dMiB\t%s\t%s\n", i.Hash, i.Current, i.Bytes>>20, i.Built.Format("2006-01-02 15:04"), i.Dir)
	}
	return tw.Flush()
}
