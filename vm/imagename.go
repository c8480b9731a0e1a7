package vm

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownImage is wrapped when the `image` key names no image `git corral image list` shows.
var ErrUnknownImage = errors.New("no such base image")

// FindImageFor returns the image a box of cfgImage (the `image` key) boots on a VM of arch:
// the current recipe's for arch when empty (FindImage), otherwise the image of that name (its
// hash, as `git corral image list` prints it) from the first directory that has it, or an
// error wrapping ErrUnknownImage that lists the names there are. A named image of another
// architecture is refused (CheckImageArch).
func FindImageFor(dirs []string, cfgImage, arch string) (Image, error) {
	if cfgImage == "" {
		return FindImage(dirs, arch)
	}
	all, err := ListImages(dirs)
	if err != nil {
		return Image{}, err
	}
	var names []string
	for _, img := range all {
		if img.Hash == cfgImage {
			return img, CheckImageArch(img, arch)
		}
		names = append(names, img.Hash)
	}
	have := "none is built"
	if len(names) > 0 {
		have = "built: " + strings.Join(names, ", ")
	}
	return Image{}, fmt.Errorf("%w %q (%s; looked in %s)", ErrUnknownImage, cfgImage, have, strings.Join(dirs, ", "))
}
