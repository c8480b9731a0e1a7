package vm

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lima-vm/lima/pkg/limayaml"
)

// Lima's validator asks runtime.GOARCH whether a vz template's arch is the host's own (vz runs
// only native guests), so on this machine it can judge only the rendering for its own arch.
// validateForHost runs Lima's loader and validator on a template rendered for a Darwin host of
// goarch, sets aside exactly the one error that comes from the test machine's arch, and makes
// that check itself against goarch: the template's arch, and every image file's arch, must be
// the one a vz host of goarch runs.
func validateForHost(b []byte, path, goarch string) error {
	y, err := limayaml.Load(b, path)
	if err != nil {
		return fmt.Errorf("load template %s: %w", path, err)
	}
	want := limayaml.NewArch(goarch)
	machineOnly := fmt.Sprintf("field `arch` must be %q for VZ; got %q", limayaml.NewArch(runtime.GOARCH), want)
	var errs []error
	for _, e := range flatten(limayaml.Validate(y, false)) {
		if e.Error() != machineOnly || goarch == runtime.GOARCH {
			errs = append(errs, e)
		}
	}
	if *y.VMType != limayaml.VZ || *y.Arch != want {
		errs = append(errs, fmt.Errorf("vmType %q arch %q, want %q %q", *y.VMType, *y.Arch, limayaml.VZ, want))
	}
	for _, img := range y.Images {
		for _, f := range []*limayaml.File{&img.File, &img.Kernel.File, img.Initrd} {
			if f.Arch != want {
				errs = append(errs, fmt.Errorf("image file %q arch %q, want %q", f.Location, f.Arch, want))
			}
		}
	}
	return errors.Join(errs...)
}

// flatten lists the leaves of the nested errors.Join that Lima's validator builds.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// TestRenderDarwinHosts: the vz template is valid, by Lima's own validator, for both macOS host
// architectures, rendered as ensure.go renders it (Arch from the host's GOARCH), in every network
// mode and in clone mode.
func TestRenderDarwinHosts(t *testing.T) {
	for _, goarch := range []string{"arm64", "amd64"} {
		for _, tc := range []struct {
			name string
			edit func(*TemplateOptions)
		}{
			{"full", nil},
			{"broker", func(o *TemplateOptions) { o.Config.Network = "broker" }},
			{"offline-readonly", func(o *TemplateOptions) { o.Config.Network, o.Config.ReadonlyProject = "offline", true }},
			{"clone", func(o *TemplateOptions) { o.NoProjectMount = true }},
		} {
			t.Run("darwin-"+goarch+"-"+tc.name, func(t *testing.T) {
				b := renderFor(t, HostDarwin, goarch, tc.edit)
				if err := validateForHost(b, filepath.Join(t.TempDir(), "lima.yaml"), goarch); err != nil {
					t.Errorf("Lima's validator refuses the darwin/%s template: %v\n%s", goarch, err, b)
				}
			})
		}
	}
}

// TestValidateForHostRefuses is the control of TestRenderDarwinHosts: validateForHost still
// refuses a template rendered for the other arch, and any error of Lima's validator other than
// the test machine's arch check.
func TestValidateForHostRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, render, host string
		edit               func(*TemplateOptions)
		want               string
	}{
		{"amd64 template on an arm64 host", "amd64", "arm64", nil, `want "vz" "aarch64"`},
		{"arm64 template on an amd64 host", "arm64", "amd64", nil, `want "vz" "x86_64"`},
		{"bad memory on arm64", "arm64", "arm64", func(o *TemplateOptions) { o.Config.Memory = "lots" }, "memory"},
		{"bad memory on amd64", "amd64", "amd64", func(o *TemplateOptions) { o.Config.Memory = "lots" }, "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := renderFor(t, HostDarwin, tc.render, tc.edit)
			err := validateForHost(b, filepath.Join(t.TempDir(), "lima.yaml"), tc.host)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validateForHost = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestRenderRefusesImageOfAnotherArch: the template's arch check compares the image's recorded
// architecture with the VM's: a darwin/arm64 render of an amd64 image is refused, as is a
// linux/amd64 render of an arm64 image and an image recording none, each naming the image,
// both architectures and the fix; the control, the image of the VM's own arch, renders.
func TestRenderRefusesImageOfAnotherArch(t *testing.T) {
	for _, tc := range []struct {
		name, hostOS, vm, image string
		want                    []string
	}{
		{"darwin arm64 vm, amd64 image", HostDarwin, "arm64", "amd64", []string{"built for amd64", "VM is arm64", "--arch arm64", "0123456789abcdef"}},
		{"linux amd64 vm, arm64 image", HostLinux, "amd64", "arm64", []string{"built for arm64", "VM is amd64", "--arch amd64"}},
		{"darwin arm64 vm, no recorded arch", HostDarwin, "arm64", "", []string{"records no architecture", "--arch arm64"}},
		{"control: darwin arm64 vm, arm64 image", HostDarwin, "arm64", "arm64", nil},
		{"control: linux amd64 vm, amd64 image", HostLinux, "amd64", "amd64", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, tc.hostOS)
			o.Arch, o.Image.Arch, o.Image.Hash = limayaml.NewArch(tc.vm), tc.image, "0123456789abcdef"
			y, err := Render(o)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Render = %v, want the image of the VM's arch accepted", err)
				}
				for _, f := range []*limayaml.File{&y.Images[0].File, &y.Images[0].Kernel.File, y.Images[0].Initrd} {
					if f.Arch != limayaml.NewArch(tc.image) {
						t.Errorf("image file %s labelled %q, want the image's %q", f.Location, f.Arch, tc.image)
					}
				}
				return
			}
			if !errors.Is(err, ErrArch) {
				t.Fatalf("Render = %v, want ErrArch", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// renderFor renders and marshals the test template for hostOS on goarch, as ensure.go does.
func renderFor(t *testing.T, hostOS, goarch string, edit func(*TemplateOptions)) []byte {
	t.Helper()
	o := testOptions(t, hostOS)
	o.Arch, o.Image.Arch = limayaml.NewArch(goarch), goarch
	if edit != nil {
		edit(&o)
	}
	y, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(y)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
