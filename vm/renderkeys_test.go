package vm

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lima-vm/lima/pkg/limayaml"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
)

// renderedBox renders cfg's box the way a new box is created (RenderBox: the image lookup,
// the template, Lima's own validation) and reads the template back as Lima loads it.
func renderedBox(t *testing.T, m *Manager, cfg *policy.Config) (*limayaml.LimaYAML, Rendered) {
	t.Helper()
	r, err := m.RenderBox(context.Background(), BoxSpec{Box: "proj-abc123", ProjectDir: testProject(t), Config: cfg, Bundle: testBundle()}, true)
	if err != nil {
		t.Fatalf("RenderBox: %v", err)
	}
	y, err := limayaml.Load(r.YAML, filepath.Join(t.TempDir(), "lima.yaml"))
	if err != nil {
		t.Fatalf("Lima cannot load the rendered template: %v", err)
	}
	return y, r
}

// imageHome is a $CORRAL_HOME holding two built images: the one of this version's recipe and
// an older one, by the names `git corral image list` prints.
func imageHome(t *testing.T) (m *Manager, current, older string) {
	t.Helper()
	h := home.Home{Dir: t.TempDir()}
	t.Setenv("CORRAL_SYSTEM_IMAGES", filepath.Join(h.Dir, "no-system-images"))
	current = fakeImage(t, h.Images(), RecipeHash(), true)
	older = fakeImage(t, h.Images(), "0123456789abcdef", true)
	return &Manager{Home: h}, current, older
}

// TestImageKeyMakesTheBox: a box is created from the image `image` names: its template boots
// that image's disk, kernel and initrd and the box records that image; the control, image
// unset, makes it from the image of this version's recipe.
func TestImageKeyMakesTheBox(t *testing.T) {
	m, current, older := imageHome(t)
	for _, c := range []struct {
		image, dir, hash string
	}{
		{"0123456789abcdef", older, "0123456789abcdef"},
		{"", current, RecipeHash()},
	} {
		cfg := policy.Default()
		cfg.Image = c.image
		y, r := renderedBox(t, m, cfg)
		if len(y.Images) != 1 {
			t.Fatalf("image %q: template boots %d images, want 1", c.image, len(y.Images))
		}
		img := y.Images[0]
		want := Image{Dir: c.dir}
		if img.Location != want.Disk() || img.Kernel == nil || img.Kernel.Location != want.Kernel() || img.Initrd == nil || img.Initrd.Location != want.Initrd() {
			t.Errorf("image %q: template boots %+v (kernel %+v, initrd %+v), want the files of %s", c.image, img.File, img.Kernel, img.Initrd, c.dir)
		}
		if r.Image.Hash != c.hash {
			t.Errorf("image %q: the box records image %q, want %q", c.image, r.Image.Hash, c.hash)
		}
	}
}

// TestSizeKeysMakeTheBox: cpus, memory and disk are what the created box's template gives Lima;
// the control, the defaults, gives Lima the defaults.
func TestSizeKeysMakeTheBox(t *testing.T) {
	m, _, _ := imageHome(t)
	def := policy.Default()
	cfg := policy.Default()
	cfg.CPUs, cfg.Memory, cfg.Disk = 3, "3GiB", "31GiB"
	for _, c := range []struct {
		cfg          *policy.Config
		cpus         int
		memory, disk string
	}{{cfg, 3, "3GiB", "31GiB"}, {def, 2, "2GiB", "10GiB"}} {
		y, _ := renderedBox(t, m, c.cfg)
		if y.CPUs == nil || *y.CPUs != c.cpus || y.Memory == nil || *y.Memory != c.memory || y.Disk == nil || *y.Disk != c.disk {
			t.Errorf("template gives Lima cpus %v, memory %v, disk %v; want %d, %s, %s", deref(y.CPUs), deref(y.Memory), deref(y.Disk), c.cpus, c.memory, c.disk)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
