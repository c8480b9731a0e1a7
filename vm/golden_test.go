package vm

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// TestGoldenKey: the key changes with every guest-recipe input and with nothing per box.
func TestGoldenKey(t *testing.T) {
	img := Image{Hash: "aaaa"}
	base := func() (*policy.Config, provision.Bundle) {
		c := policy.Default()
		c.Packages = []string{"make", "gcc"}
		return c, provision.Bundle{Scripts: []provision.Script{{Name: "10-base.sh", Mode: provision.ModeSystem, Body: "true\n"}}}
	}
	c0, b0 := base()
	k0 := GoldenKey(img, c0, b0, GoldenBox{})
	changes := map[string]func(c *policy.Config, b *provision.Bundle, i *Image){
		"image":        func(_ *policy.Config, _ *provision.Bundle, i *Image) { i.Hash = "bbbb" },
		"disk":         func(c *policy.Config, _ *provision.Bundle, _ *Image) { c.Disk = "20GiB" },
		"packages":     func(c *policy.Config, _ *provision.Bundle, _ *Image) { c.Packages = append(c.Packages, "git") },
		"script body":  func(_ *policy.Config, b *provision.Bundle, _ *Image) { b.Scripts[0].Body = "false\n" },
		"script mode":  func(_ *policy.Config, b *provision.Bundle, _ *Image) { b.Scripts[0].Mode = provision.ModeUser },
		"script added": func(_ *policy.Config, b *provision.Bundle, _ *Image) { b.Scripts = append(b.Scripts, b.Scripts[0]) },
		// A body that smuggles the next field's separator must not collide with two fields.
		"split body": func(_ *policy.Config, b *provision.Bundle, _ *Image) { b.Scripts[0].Name = "10-base.sh\x00system" },
	}
	for name, change := range changes {
		c, b := base()
		i := img
		change(c, &b, &i)
		if GoldenKey(i, c, b, GoldenBox{}) == k0 {
			t.Errorf("%s changed but the golden key did not", name)
		}
	}
	// The per-box scripts are not part of the recipe: the git shadow (one checkout's metadata)
	// and the repository's own scripts run in every box and never in the golden build.
	for _, name := range []string{provision.GitShadowScriptName, provision.RepoScriptPrefix + "01-setup-sh.sh"} {
		c, b := base()
		b.Scripts = append(b.Scripts, provision.Script{Name: name, Mode: provision.ModeSystem, Body: "echo per box\n"})
		if GoldenKey(img, c, b, GoldenBox{}) != k0 {
			t.Errorf("per-box script %s changed the golden key", name)
		}
	}
	same := map[string]func(c *policy.Config){
		"package order": func(c *policy.Config) { c.Packages = []string{"gcc", "make"} },
		"network":       func(c *policy.Config) { c.Network = policy.NetworkOffline },
		"cpus":          func(c *policy.Config) { c.CPUs = 1 },
		"provision":     func(c *policy.Config) { c.Provision = []string{"scripts/repo.sh"} },
	}
	for name, change := range same {
		c, b := base()
		change(c)
		if GoldenKey(img, c, b, GoldenBox{}) != k0 {
			t.Errorf("%s changed the golden key: it is per box, not part of the guest recipe", name)
		}
	}
}

// TestGoldenKeyAcrossProjects: the project path and the broker port are masked out of the
// recipe's scripts, so boxes of two projects (or a broker box made again with a new port) share
// a base; the network mode, which the scripts carry, still separates bases; a state base also
// depends on the CPUs and memory its saved state was made with.
func TestGoldenKeyAcrossProjects(t *testing.T) {
	img := Image{Hash: "aaaa"}
	c := policy.Default()
	bundle := func(dir, mode string, port int) provision.Bundle {
		return provision.Bundle{Scripts: []provision.Script{
			{Name: "10-base.sh", Mode: provision.ModeSystem, Body: "MODE=" + mode + "\nPROJECT_DIR='" + dir + "'\n"},
			{Name: "20-lockdown.sh", Mode: provision.ModeSystem, Body: fmt.Sprintf("tcp dport %d accept\n", port)},
			// The guard check pins the ruleset's digest, which the port changes.
			{Name: "10-base-check.sh", Mode: provision.ModeSystem, Body: fmt.Sprintf("RULESET_SHA256='%x'\n<<'CORRAL_EOF_%.16x'\n", sha256.Sum256([]byte(strconv.Itoa(port))), sha256.Sum256([]byte(dir)))},
		}}
	}
	key := func(dir, mode string, port int, state bool) string {
		return GoldenKey(img, c, bundle(dir, mode, port), GoldenBox{ProjectDir: dir, BrokerPort: port, State: state})
	}
	a := key("/home/u/a", "broker", 40001, true)
	if b := key("/srv/other project", "broker", 40002, true); b != a {
		t.Errorf("two projects with two broker ports: keys %s and %s, want one base", a, b)
	}
	if b := key("/home/u/a", "offline", 40001, true); b == a {
		t.Error("the network mode did not change the key")
	}
	if b := key("/home/u/a", "broker", 40001, false); b == a {
		t.Error("a disk-only base shares the key of a state base")
	}
	// Masking only what the box names: a script that differs otherwise still changes the key.
	b := bundle("/home/u/a", "broker", 40001)
	b.Scripts[0].Body += "extra\n"
	if GoldenKey(img, c, b, GoldenBox{ProjectDir: "/home/u/a", BrokerPort: 40001, State: true}) == a {
		t.Error("a changed script body kept the key")
	}
	for name, change := range map[string]func(c *policy.Config){
		"cpus":   func(c *policy.Config) { c.CPUs++ },
		"memory": func(c *policy.Config) { c.Memory = "8GiB" },
	} {
		c2 := *c
		change(&c2)
		box := GoldenBox{ProjectDir: "/home/u/a", BrokerPort: 40001}
		if GoldenKey(img, &c2, bundle("/home/u/a", "broker", 40001), box) != GoldenKey(img, c, bundle("/home/u/a", "broker", 40001), box) {
			t.Errorf("%s changed a disk-only base's key", name)
		}
		box.State = true
		if GoldenKey(img, &c2, bundle("/home/u/a", "broker", 40001), box) == a {
			t.Errorf("%s did not change a state base's key", name)
		}
	}
}

// TestGoldenNeverWritten: a box disk made as CreateFromGolden makes it (a qcow2 overlay backed
// by the golden file) takes writes into the overlay only; the golden file's hash is unchanged and
// VerifyGolden agrees, and a changed golden file is caught.
func TestGoldenNeverWritten(t *testing.T) {
	for _, tool := range []string{"qemu-img", "qemu-io"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/setup.sh installs qemu-utils)", tool)
		}
	}
	ctx := context.Background()
	dir := t.TempDir()
	g := Golden{Key: "k", Dir: dir}
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", g.DiskPath(), "64M")
	run(t, "qemu-io", "-c", "write -P 0xaa 0 1M", g.DiskPath())
	if err := os.Chmod(g.DiskPath(), 0o444); err != nil {
		t.Fatal(err)
	}
	sum, err := fileSHA256(ctx, g.DiskPath())
	if err != nil {
		t.Fatal(err)
	}
	g.SHA256 = sum
	box := filepath.Join(dir, "diffdisk")
	if err := qemuImg(ctx, "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", g.DiskPath(), box); err != nil {
		t.Fatal(err)
	}
	// The box writes over the golden data and past it, then reads its own data back.
	run(t, "qemu-io", "-c", "write -P 0x55 0 2M", box)
	if out := run(t, "qemu-io", "-c", "read -P 0x55 0 2M", box); strings.Contains(out, "Pattern verification failed") {
		t.Fatalf("overlay does not hold the box's write: %s", out)
	}
	if err := VerifyGolden(ctx, g); err != nil {
		t.Fatalf("golden base changed by a box using it: %v", err)
	}
	if out := run(t, "qemu-io", "-r", "-c", "read -P 0xaa 0 1M", g.DiskPath()); strings.Contains(out, "Pattern verification failed") {
		t.Fatalf("golden base content changed: %s", out)
	}
	// The check can fail: a golden base written behind our back is reported.
	if os.Geteuid() != 0 {
		if f, err := os.OpenFile(g.DiskPath(), os.O_WRONLY, 0); err == nil {
			f.Close()
			t.Fatal("golden base (mode 0444) opened for writing")
		}
	}
	if err := os.Chmod(g.DiskPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "qemu-io", "-c", "write -P 0x11 0 4k", g.DiskPath())
	if err := VerifyGolden(ctx, g); err == nil || !strings.Contains(err.Error(), "was modified") {
		t.Fatalf("VerifyGolden after a write = %v, want 'was modified'", err)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
	return string(out)
}

// TestGoldensAndPrune: list names the boxes using a base; prune keeps those and removes the
// unused and the half-built.
func TestGoldensAndPrune(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	m := &Manager{Home: h}
	for _, k := range []string{"used", "unused"} {
		g := Golden{Key: k, Dir: filepath.Join(m.GoldenRoot(), k), SHA256: "x"}
		if err := os.MkdirAll(g.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(g.DiskPath(), []byte("disk"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := writeGoldenMeta(g); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(g.Dir, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(m.GoldenRoot(), "halfbuilt"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"b1", "gone"} {
		if err := m.WriteMeta(Meta{Box: b, Golden: "used"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.WriteMeta(Meta{Box: "gone2", Golden: "unused"}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.LimaHome(), "b1"), 0o700); err != nil { // only b1's instance exists
		t.Fatal(err)
	}
	gs, err := m.Goldens()
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[1].Key != "used" || len(gs[1].Users) != 1 || gs[1].Users[0] != "b1" {
		t.Fatalf("Goldens = %+v, want unused and used (by b1)", gs)
	}
	gone, err := m.PruneGoldens()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(gone, ",") != "halfbuilt,unused" {
		t.Fatalf("pruned %v, want halfbuilt,unused", gone)
	}
	if _, err := m.FindGolden("used"); err != nil {
		t.Fatalf("a base in use was pruned: %v", err)
	}
}

// TestGoldenKeyClone: clone-mode boxes (nothing mounted: 05-box writes no project directory)
// of two repositories with two broker ports share one golden base, from the guest scripts
// provision renders for each, since 05-box (the box's own values) is not in the key. A
// checkout's box has a base of its own: its guard check also checks the git shadow
// (SHADOW_EXPECTED in 10-base), which is in the recipe. The control: another network mode.
func TestGoldenKeyClone(t *testing.T) {
	img := Image{Hash: "aaaa"}
	c := policy.Default()
	render := func(network policy.Network, dir string, port int, shadow bool) provision.Bundle {
		o := provision.Options{Network: network, User: "u", ProjectDir: dir, BrokerPort: port}
		if shadow {
			o.GitShadowScript = "#!/bin/sh\necho shadow\n"
		}
		b, err := provision.Render(o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r := Rendered{MountType: "9p"}
	t.Setenv("CORRAL_NO_GOLDEN_STATE", "")
	cloneA := BoxSpec{ProjectDir: "/var/tmp/clones/a", BrokerPort: 40001, NoProjectMount: true}
	cloneB := BoxSpec{ProjectDir: "/home/u/b", BrokerPort: 40002, NoProjectMount: true}
	mountSpec := BoxSpec{ProjectDir: "/home/u/proj", BrokerPort: 40003, Agents: AgentMounts{Store: "/s", State: "/t"}}
	if !mountSpec.GoldenBox(r).State || !cloneA.GoldenBox(r).State {
		t.Fatal("a 9p checkout box or a clone box cannot resume a state")
	}
	a := GoldenKey(img, c, render(policy.NetworkBroker, "", 40001, false), cloneA.GoldenBox(r))
	if b := GoldenKey(img, c, render(policy.NetworkBroker, "", 40002, false), cloneB.GoldenBox(r)); b != a {
		t.Errorf("two clone boxes of one configuration: keys %s and %s, want one base", a, b)
	}
	if m := GoldenKey(img, c, render(policy.NetworkBroker, "/home/u/proj", 40003, true), mountSpec.GoldenBox(r)); m == a {
		t.Error("a checkout's box (git shadow checked) and a clone box share a base")
	}
	if off := GoldenKey(img, c, render(policy.NetworkOffline, "", 0, false), cloneA.GoldenBox(r)); off == a {
		t.Error("control: an offline clone box shares the broker clone boxes' base")
	}
	// 05-box's body is the box's own: another one leaves the key as it is.
	b := render(policy.NetworkBroker, "", 40001, false)
	for i, s := range b.Scripts {
		if s.Name == provision.BoxScriptName {
			b.Scripts[i].Body += "# another value\n"
		}
	}
	if GoldenKey(img, c, b, cloneA.GoldenBox(r)) != a {
		t.Error("a change of 05-box's body changed the key")
	}
}
