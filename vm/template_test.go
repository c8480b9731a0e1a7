package vm

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lima-vm/lima/pkg/limayaml"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testProject returns a fixed project path, so the golden files do not depend on t.TempDir's
// random name (Lima's validator only warns about a mount location that does not exist), and
// points LIMA_HOME at an empty directory so no host Lima defaults mix in.
func testProject(t *testing.T) string {
	t.Helper()
	t.Setenv("LIMA_HOME", t.TempDir())
	return "/home/dev/src/project"
}

func testBundle() provision.Bundle {
	return provision.Bundle{Scripts: []provision.Script{
		{Name: "10-base.sh", Mode: provision.ModeSystem, Body: "#!/bin/sh\nset -eu\necho base\n"},
		{Name: "50-user.sh", Mode: provision.ModeUser, Body: "#!/bin/sh\necho 'it''s \"quoted\": yes' > \"$HOME/x\"\n"},
	}}
}

func testOptions(t *testing.T, hostOS string) TemplateOptions {
	cfg := policy.Default()
	cfg.Network = policy.NetworkFull // the goldens' base case; each other mode says so
	return TemplateOptions{
		HostOS: hostOS, Arch: "x86_64", ProjectDir: testProject(t), Config: cfg, Bundle: testBundle(),
		Image: Image{Dir: "/var/cache/git-corral/images/0123456789abcdef", Arch: ArchAMD64}, MountType: limayaml.NINEP, TCG: true,
	}
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hostOS string
		edit   func(*TemplateOptions)
	}{
		{"linux-full", HostLinux, nil},
		{"linux-offline-readonly", HostLinux, func(o *TemplateOptions) {
			o.Config.Network, o.Config.ReadonlyProject, o.TCG, o.Bundle = policy.NetworkOffline, true, false, provision.Bundle{}
		}},
		{"darwin-broker", HostDarwin, func(o *TemplateOptions) { o.Config.Network = policy.NetworkBroker }},
		{"linux-clone-nomount", HostLinux, func(o *TemplateOptions) { o.NoProjectMount = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, tc.hostOS)
			if tc.edit != nil {
				tc.edit(&o)
			}
			y, err := Render(o)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Marshal(y)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./vm -run TestRenderGolden -update)", err)
			}
			if string(b) != string(want) {
				t.Errorf("%s differs from the rendered template:\n%s", golden, b)
			}
			if err := Validate(b, filepath.Join(t.TempDir(), "lima.yaml")); err != nil {
				t.Errorf("Lima's validator refuses the rendered template: %v", err)
			}
		})
	}
}

// TestRenderNoProjectMount: a clone-mode box mounts nothing of the host, even after Lima fills
// in its defaults, on both host systems.
func TestRenderNoProjectMount(t *testing.T) {
	for _, hostOS := range []string{HostLinux, HostDarwin} {
		o := testOptions(t, hostOS)
		o.NoProjectMount = true
		if y := renderLoad(t, o); len(y.Mounts) != 0 {
			t.Errorf("%s: clone-mode mounts = %+v, want none", hostOS, y.Mounts)
		}
		o.NoProjectMount = false
		if y := renderLoad(t, o); len(y.Mounts) != 1 {
			t.Errorf("%s: mount-mode mounts = %+v, want the project", hostOS, y.Mounts)
		}
	}
}

// TestRenderPromises checks each promise of the template on the values Lima fills in, so that a
// default Lima adds cannot widen the box.
func TestRenderPromises(t *testing.T) {
	for _, hostOS := range []string{HostLinux, HostDarwin} {
		o := testOptions(t, hostOS)
		o.Config.Network = policy.NetworkBroker
		o.Config.ReadonlyProject = true
		y := renderLoad(t, o)
		if len(y.Mounts) != 1 || y.Mounts[0].Location != o.ProjectDir || *y.Mounts[0].MountPoint != o.ProjectDir || *y.Mounts[0].Writable {
			t.Errorf("%s: mounts = %+v, want only the project, read-only, at its real path", hostOS, y.Mounts)
		}
		if *y.SSH.LoadDotSSHPubKeys || *y.SSH.ForwardAgent || *y.SSH.ForwardX11 {
			t.Errorf("%s: ssh = %+v, want no host keys, no agent, no X11", hostOS, y.SSH)
		}
		if *y.Containerd.System || *y.Containerd.User {
			t.Errorf("%s: containerd on", hostOS)
		}
		if *y.HostResolver.Enabled {
			t.Errorf("%s: host resolver on in broker mode", hostOS)
		}
		if *y.PropagateProxyEnv {
			t.Errorf("%s: host proxy variables propagated", hostOS)
		}
		if len(y.PortForwards) == 0 || !y.PortForwards[0].Ignore || !y.PortForwards[0].GuestIP.IsUnspecified() ||
			y.PortForwards[0].GuestPortRange != [2]int{1, 65535} {
			t.Errorf("%s: first port forward rule %+v does not ignore every guest port", hostOS, y.PortForwards)
		}
		if len(y.Provision) != 2 || y.Provision[0].Mode != "system" || y.Provision[1].Mode != "user" ||
			y.Provision[1].Script != testBundle().Scripts[1].Body {
			t.Errorf("%s: provision = %+v, want the bundle's scripts in order", hostOS, y.Provision)
		}
		wantVM, wantMount := "qemu", "9p"
		if hostOS == HostDarwin {
			wantVM, wantMount = "vz", "virtiofs"
		}
		if *y.VMType != wantVM || *y.MountType != wantMount {
			t.Errorf("%s: vmType %s mountType %s, want %s %s", hostOS, *y.VMType, *y.MountType, wantVM, wantMount)
		}
	}
}

func renderLoad(t *testing.T, o TemplateOptions) *limayaml.LimaYAML {
	t.Helper()
	y, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(y)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := limayaml.Load(b, filepath.Join(t.TempDir(), "lima.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := limayaml.Validate(loaded, false); err != nil {
		t.Fatal(err)
	}
	return loaded
}

func TestRenderHostileValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*TemplateOptions)
		want string
	}{
		{"newline in project path", func(o *TemplateOptions) { o.ProjectDir += "\nmounts: []" }, "newline"},
		{"relative project path", func(o *TemplateOptions) { o.ProjectDir = "project" }, "absolute"},
		{"unclean project path", func(o *TemplateOptions) { o.ProjectDir = "/tmp/../etc" }, "absolute and clean"},
		{"newline in memory", func(o *TemplateOptions) { o.Config.Memory = "2GiB\nvmType: vz" }, "memory"},
		{"newline in image dir", func(o *TemplateOptions) { o.Image.Dir = "/x\n- location: /" }, "image"},
		{"bad mount type", func(o *TemplateOptions) { o.MountType = "bind" }, "mount type"},
		{"bad host", func(o *TemplateOptions) { o.HostOS = "windows" }, "host OS"},
		{"zero cpus", func(o *TemplateOptions) { o.Config.CPUs = 0 }, "cpus"},
		{"script mode", func(o *TemplateOptions) { o.Bundle.Scripts[0].Mode = "boot" }, "mode"},
		{"empty script", func(o *TemplateOptions) { o.Bundle.Scripts[1].Body = " \n" }, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, HostLinux)
			tc.edit(&o)
			_, err := Render(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestRenderQuotesScripts shows that script text that looks like YAML stays script text.
func TestRenderQuotesScripts(t *testing.T) {
	o := testOptions(t, HostLinux)
	evil := "#!/bin/sh\necho hi\nmounts:\n- location: /\n  writable: true\n"
	o.Bundle.Scripts = []provision.Script{{Name: "x", Mode: provision.ModeSystem, Body: evil}}
	y := renderLoad(t, o)
	if len(y.Mounts) != 1 || y.Provision[0].Script != evil {
		t.Fatalf("script text changed the template: mounts %+v, script %q", y.Mounts, y.Provision[0].Script)
	}
}
