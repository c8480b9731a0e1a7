package vm

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRecipeHashStable(t *testing.T) {
	h := RecipeHash()
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(h) || h != RecipeHash() {
		t.Fatalf("RecipeHash = %q, want 16 stable hex digits", h)
	}
	b, err := recipeFS.ReadFile("imagerecipe/build-image.sh")
	if err != nil || !bytes.Contains(b, []byte("PHASE debootstrap")) {
		t.Fatalf("embedded recipe lacks its PHASE lines: %v", err)
	}
}

// fakeImage writes an image directory with the given hash (the files' content does not matter
// to lookup).
func fakeImage(t *testing.T, dir, hash string, complete bool) string {
	t.Helper()
	d := filepath.Join(dir, hash)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{ImageDisk, ImageKernel}
	if complete {
		files = append(files, ImageInitrd)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(d, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(Image{Hash: hash, Arch: HostArch(), Bytes: 3, Built: time.Unix(0, 0).UTC()})
	if err := os.WriteFile(filepath.Join(d, imageMeta), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFindListPruneImages(t *testing.T) {
	user, sys := t.TempDir(), t.TempDir()
	dirs := []string{user, sys}
	if _, err := FindImage(dirs, HostArch()); err == nil || !strings.Contains(err.Error(), RecipeHash()) {
		t.Fatalf("FindImage with nothing built = %v, want ErrNoImage naming the recipe", err)
	}
	fakeImage(t, user, RecipeHash(), false) // incomplete: no initrd
	want := fakeImage(t, sys, RecipeHash(), true)
	old := fakeImage(t, user, "0000000000000000", true)
	img, err := FindImage(dirs, HostArch())
	if err != nil || img.Dir != want || !img.Current {
		t.Fatalf("FindImage = %+v, %v; want the complete image in %s", img, err, want)
	}
	list, err := ListImages(dirs)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListImages = %+v, %v; want the old and the current complete image", list, err)
	}
	removed, err := PruneImages(user)
	if err != nil || len(removed) != 1 || removed[0] != old {
		t.Fatalf("PruneImages = %v, %v; want only %s removed", removed, err, old)
	}
	if _, err := os.Stat(filepath.Join(user, RecipeHash())); err != nil {
		t.Errorf("prune removed the current recipe's directory: %v", err)
	}
}

func TestBuildImageNeedsRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root the build would really run (mmdebstrap); covered by scripts/setup.sh")
	}
	_, err := BuildImage(t.Context(), t.TempDir(), HostArch(), false, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "root") {
		t.Fatalf("BuildImage as a user = %v, want a refusal naming root", err)
	}
}

func TestImageDirsDedupe(t *testing.T) {
	env := func(string) string { return "" }
	if d := ImageDirs(SystemImageDir+"/", env); len(d) != 1 {
		t.Errorf("ImageDirs(system dir) = %v, want it once", d)
	}
	if d := ImageDirs("/home/u/.corral/images", env); len(d) != 2 || d[1] != SystemImageDir {
		t.Errorf("ImageDirs = %v, want the user's dir then %s", d, SystemImageDir)
	}
}
