package vm

import (
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lima-vm/lima/pkg/limayaml"

	"github.com/git-corral/git-corral/policy"
)

// loadRendered renders o, marshals it and loads it back as limactl would, defaults filled,
// after Lima's own validator accepted it.
func loadRendered(t *testing.T, o TemplateOptions) *limayaml.LimaYAML {
	t.Helper()
	y, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(y)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lima.yaml")
	if err := Validate(b, path); err != nil {
		t.Fatalf("Lima's validator refuses the rendered template: %v", err)
	}
	got, err := limayaml.Load(b, path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRenderPorts: each ports entry is one TCP rule from 127.0.0.1 to the guest port, in
// order, and the rule ignoring every other guest port comes after them, as Lima loads it.
func TestRenderPorts(t *testing.T) {
	o := testOptions(t, HostLinux)
	o.Config.Ports = []string{"18080:8080", "19000:3000"}
	y := loadRendered(t, o)
	want := []policy.Port{{Host: 18080, Guest: 8080}, {Host: 19000, Guest: 3000}}
	if len(y.PortForwards) < len(want)+1 {
		t.Fatalf("port forwards = %+v, want %d rules then the ignore rule", y.PortForwards, len(want))
	}
	for i, p := range want {
		r := y.PortForwards[i]
		if r.Ignore || !r.HostIP.Equal(net.IPv4(127, 0, 0, 1)) || r.HostPortRange != [2]int{p.Host, p.Host} ||
			r.GuestPortRange != [2]int{p.Guest, p.Guest} || r.Proto != limayaml.ProtoTCP || r.HostSocket != "" {
			t.Errorf("rule %d = %+v, want 127.0.0.1:%d -> guest %d, TCP", i, r, p.Host, p.Guest)
		}
	}
	last := y.PortForwards[len(want)]
	if !last.Ignore || last.GuestPortRange != [2]int{1, 65535} || !last.GuestIP.IsUnspecified() || last.Proto != limayaml.ProtoAny {
		t.Errorf("rule after the allowed ones = %+v, want every guest port ignored", last)
	}
	for i, r := range y.PortForwards {
		if !r.Ignore && !r.HostIP.IsLoopback() {
			t.Errorf("rule %d forwards from %s, not loopback", i, r.HostIP)
		}
	}
}

// TestRenderNoPorts is the control of TestRenderPorts: with no ports entry the first rule
// already ignores every guest port.
func TestRenderNoPorts(t *testing.T) {
	y := loadRendered(t, testOptions(t, HostLinux))
	if len(y.PortForwards) == 0 || !y.PortForwards[0].Ignore || y.PortForwards[0].GuestPortRange != [2]int{1, 65535} {
		t.Errorf("first rule = %+v, want every guest port ignored", y.PortForwards)
	}
}

// TestRenderPortsRefused: a ports entry the policy would refuse never reaches the template.
func TestRenderPortsRefused(t *testing.T) {
	for _, p := range []string{"0.0.0.0:8080:8080", "80:80", "8080:8080\nx"} {
		o := testOptions(t, HostLinux)
		o.Config.Ports = []string{p}
		if _, err := Render(o); err == nil || !strings.Contains(err.Error(), "ports entry") {
			t.Errorf("Render with ports %q = %v, want a ports entry error", p, err)
		}
	}
}

// TestRenderExtraMounts: an extra mount is read-only unless writable was asked for, at its
// guest path, after the project's mount.
func TestRenderExtraMounts(t *testing.T) {
	o := testOptions(t, HostLinux)
	o.ExtraMounts = []ExtraMount{
		{Entry: "~/data:/srv/data", Host: "/home/dev/data", Guest: "/srv/data"},
		{Entry: "/home/dev/out:/srv/out:rw", Host: "/home/dev/out", Guest: "/srv/out", Writable: true},
	}
	y := loadRendered(t, o)
	if len(y.Mounts) != 3 {
		t.Fatalf("mounts = %+v, want the project and two extra", y.Mounts)
	}
	for i, want := range o.ExtraMounts {
		m := y.Mounts[i+1]
		if m.Location != want.Host || m.MountPoint == nil || *m.MountPoint != want.Guest || m.Writable == nil || *m.Writable != want.Writable {
			t.Errorf("mount %d = %+v, want %s at %s writable %v", i+1, m, want.Host, want.Guest, want.Writable)
		}
	}
}

// TestRenderExtraMountsRefused: an extra mount over the project path, outside the allowed guest
// roots, with a relative or multi-line host path, or in a clone-mode box, is refused.
func TestRenderExtraMountsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		m    ExtraMount
		edit func(*TemplateOptions)
		want string
	}{
		{"guest over project", ExtraMount{Host: "/home/dev/d", Guest: "/home/dev/src/project"}, nil, "must lie inside"},
		{"guest inside project", ExtraMount{Host: "/home/dev/d", Guest: "/srv/p/x"}, func(o *TemplateOptions) { o.ProjectDir = "/srv/p" }, "overlaps the project"},
		{"guest holding project", ExtraMount{Host: "/home/dev/d", Guest: "/srv/p"}, func(o *TemplateOptions) { o.ProjectDir = "/srv/p/proj" }, "overlaps the project"},
		{"guest /etc", ExtraMount{Host: "/home/dev/d", Guest: "/etc"}, nil, "must lie inside"},
		{"relative host", ExtraMount{Host: "d", Guest: "/srv/d"}, nil, "absolute"},
		{"tilde host not expanded", ExtraMount{Host: "~/d", Guest: "/srv/d"}, nil, "absolute"},
		{"newline host", ExtraMount{Host: "/home/dev/d\n- location: /", Guest: "/srv/d"}, nil, "newline"},
		{"clone mode", ExtraMount{Host: "/home/dev/d", Guest: "/srv/d"}, func(o *TemplateOptions) { o.NoProjectMount = true }, "clone-mode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions(t, HostLinux)
			c.m.Entry = c.m.Host + ":" + c.m.Guest
			o.ExtraMounts = []ExtraMount{c.m}
			if c.edit != nil {
				c.edit(&o)
			}
			if _, err := Render(o); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Render = %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestExtraMountsNoGoldenState: a box with an extra mount has a QEMU device the golden build
// box lacks, so it is not state-capable (and is made without resuming a saved state); the
// control is the same box without it.
func TestExtraMountsNoGoldenState(t *testing.T) {
	if !stateCapable(Rendered{MountType: limayaml.NINEP}, false) && runtime.GOOS == "linux" {
		t.Fatal("control: a 9p box without extra mounts is not state-capable")
	}
	if stateCapable(Rendered{MountType: limayaml.NINEP, ExtraMounts: 1}, false) {
		t.Error("a box with an extra mount is state-capable")
	}
	spec := BoxSpec{ProjectDir: "/p", ExtraMounts: []ExtraMount{{Host: "/h", Guest: "/srv/h"}}}
	if spec.GoldenBox(Rendered{MountType: limayaml.NINEP, ExtraMounts: 1}).State {
		t.Error("GoldenBox of a box with an extra mount asks for the state path")
	}
}

// TestRecipeConfig: a golden build box gets neither the box's mounts nor its ports.
func TestRecipeConfig(t *testing.T) {
	c := policy.Default()
	c.Mounts, c.Ports = []string{"/h:/srv/h"}, []string{"18080:8080"}
	r := recipeConfig(c)
	if len(r.Mounts) != 0 || len(r.Ports) != 0 {
		t.Errorf("recipe config keeps mounts %q ports %q", r.Mounts, r.Ports)
	}
	if len(c.Mounts) != 1 || len(c.Ports) != 1 {
		t.Error("recipeConfig changed the box's own configuration")
	}
}
