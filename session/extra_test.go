package session

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// extraFixture is a host with $HOME (~/.ssh, ~/data, ~/src/proj) and $CORRAL_HOME in a temp dir.
type extraFixture struct {
	root, home, proj string
	env              map[string]string
	h                home.Home
}

func newExtraFixture(t *testing.T) *extraFixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &extraFixture{root: root, home: filepath.Join(root, "home", "u")}
	f.proj = filepath.Join(f.home, "src", "proj")
	for _, d := range []string{".ssh", "data", "src/proj/sub", ".corral", "notes"} {
		if err := os.MkdirAll(filepath.Join(f.home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.env = map[string]string{"HOME": f.home, home.Env: filepath.Join(f.home, ".corral")}
	if f.h, err = home.Resolve(f.getenv); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *extraFixture) getenv(k string) string { return f.env[k] }

func (f *extraFixture) link(t *testing.T, target, name string) string {
	t.Helper()
	p := filepath.Join(f.home, name)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExtraMountsRefused: each hostile class of mounts entry is refused before anything boots,
// with the entry named in the error and a hint; the controls below it are accepted.
func TestExtraMountsRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		entry func(t *testing.T, f *extraFixture) string
		want  string
	}{
		{"~/.ssh", func(t *testing.T, f *extraFixture) string { return "~/.ssh:/srv/x" }, "SSH directory"},
		{"$HOME itself as ~", func(t *testing.T, f *extraFixture) string { return "~:/srv/x" }, "home directory"},
		{"$HOME written out", func(t *testing.T, f *extraFixture) string { return f.home + ":/srv/x" }, "home directory"},
		{"$CORRAL_HOME", func(t *testing.T, f *extraFixture) string { return "~/.corral:/srv/x" }, "state directory"},
		{"/", func(t *testing.T, f *extraFixture) string { return "/:/srv/x" }, "root of the host"},
		{"/etc", func(t *testing.T, f *extraFixture) string { return "/etc:/srv/x" }, `"/etc"`},
		{"symlink into ~/.ssh", func(t *testing.T, f *extraFixture) string {
			f.link(t, filepath.Join(f.home, ".ssh"), "keys")
			return "~/keys:/srv/x"
		}, "SSH directory"},
		{"symlink out to /", func(t *testing.T, f *extraFixture) string {
			f.link(t, "/", "everything")
			return "~/everything:/srv/x"
		}, "root of the host"},
		{"the project", func(t *testing.T, f *extraFixture) string { return f.proj + ":/srv/x" }, "is the project"},
		{"inside the project", func(t *testing.T, f *extraFixture) string { return f.proj + "/sub:/srv/x" }, "lies inside the project"},
		{"holding the project", func(t *testing.T, f *extraFixture) string { return "~/src:/srv/x" }, "holds the project"},
		{"symlink to the project", func(t *testing.T, f *extraFixture) string {
			f.link(t, f.proj, "p")
			return "~/p:/srv/x"
		}, "is the project"},
		{"missing", func(t *testing.T, f *extraFixture) string { return "~/nothing:/srv/x" }, "no such file"},
		{"a file", func(t *testing.T, f *extraFixture) string {
			if err := os.WriteFile(filepath.Join(f.home, "data", "f"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return "~/data/f:/srv/x"
		}, "not a directory"},
		{"guest over /etc", func(t *testing.T, f *extraFixture) string { return "~/data:/etc" }, "must lie inside"},
		{"duplicate guest", func(t *testing.T, f *extraFixture) string { return "~/data:/srv/x" }, "overlaps"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newExtraFixture(t)
			entry := c.entry(t, f)
			cfg := policy.Default()
			cfg.Mounts = []string{entry}
			if c.name == "duplicate guest" {
				cfg.Mounts = append(cfg.Mounts, "~/notes:/srv/x")
			}
			_, err := ExtraMounts(f.h, cfg, f.proj, f.getenv)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), strconv.Quote(entry)) {
				t.Fatalf("ExtraMounts(%q) = %v, want a refusal naming the entry and saying %q", entry, err, c.want)
			}
			if hint.Of(err) == "" {
				t.Errorf("refusal %q has no hint", err)
			}
		})
	}
}

// TestExtraMountsGuestOverProject: a guest path that is or holds the project path is refused
// when the project lives under an allowed guest root; the control is a sibling.
func TestExtraMountsGuestOverProject(t *testing.T) {
	f := newExtraFixture(t)
	for _, c := range []struct {
		proj, guest string
		bad         bool
	}{{"/srv/p", "/srv/p", true}, {"/srv/p/q", "/srv/p", true}, {"/srv/p", "/srv/p/x", true}, {"/srv/p", "/srv/px", false}} {
		cfg := policy.Default()
		cfg.Mounts = []string{"~/data:" + c.guest}
		_, err := ExtraMounts(f.h, cfg, c.proj, f.getenv)
		if (err != nil) != c.bad {
			t.Errorf("guest %q with project %q: %v, want refused %v", c.guest, c.proj, err, c.bad)
		}
	}
}

// TestExtraMountsAccepted is the control: data directories, written with ~ or through a
// symlink, pass, and the template gets the resolved host path, read-only unless :rw.
func TestExtraMountsAccepted(t *testing.T) {
	f := newExtraFixture(t)
	f.link(t, filepath.Join(f.home, "data"), "data-link")
	cfg := policy.Default()
	cfg.Mounts = []string{"~/data:/srv/data", "~/data-link:/mnt/d:rw", f.home + "/notes:/opt/notes:ro"}
	got, err := ExtraMounts(f.h, cfg, f.proj, f.getenv)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(f.home, "data")
	want := []vm.ExtraMount{
		{Entry: cfg.Mounts[0], Host: data, Guest: "/srv/data"},
		{Entry: cfg.Mounts[1], Host: data, Guest: "/mnt/d", Writable: true},
		{Entry: cfg.Mounts[2], Host: filepath.Join(f.home, "notes"), Guest: "/opt/notes"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mount %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestPortsFree: a host port something listens on at 127.0.0.1 is refused naming the entry;
// the control is the same port once the listener is closed.
func TestPortsFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	cfg := policy.Default()
	cfg.Ports = []string{strconv.Itoa(port) + ":8080"}
	err = PortsFree(cfg)
	if err == nil || !strings.Contains(err.Error(), strconv.Quote(cfg.Ports[0])) || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("PortsFree with a listener on %d = %v, want the entry named as in use", port, err)
	}
	if hint.Of(err) == "" {
		t.Errorf("refusal %v has no hint", err)
	}
	l.Close()
	if err := PortsFree(cfg); err != nil {
		t.Errorf("control: PortsFree once the listener closed = %v", err)
	}
}

// TestCheckBoxKeys: a box whose recorded mounts or ports differ from the configuration is
// refused (a removed mount above all); the same entries in another order are not.
func TestCheckBoxKeys(t *testing.T) {
	for _, c := range []struct {
		name                  string
		hadM, hadP, wantM, wP []string
		bad                   bool
	}{
		{"mount removed", []string{"~/a:/srv/a"}, nil, nil, nil, true},
		{"mount added", nil, nil, []string{"~/a:/srv/a"}, nil, true},
		{"mount made writable", []string{"~/a:/srv/a"}, nil, []string{"~/a:/srv/a:rw"}, nil, true},
		{"port changed", nil, []string{"18080:8080"}, nil, []string{"18081:8080"}, true},
		{"port removed", nil, []string{"18080:8080"}, nil, nil, true},
		{"control: same entries reordered", []string{"~/a:/srv/a", "~/b:/srv/b"}, []string{"1:2", "3:4"},
			[]string{"~/b:/srv/b", "~/a:/srv/a"}, []string{"3:4", "1:2"}, false},
		{"control: none", nil, nil, []string{}, nil, false},
	} {
		cfg := policy.Default()
		cfg.Mounts, cfg.Ports = c.wantM, c.wP
		err := CheckBoxKeys("b", vm.Meta{Mounts: c.hadM, Ports: c.hadP}, cfg)
		if (err != nil) != c.bad || err != nil && (!errors.Is(err, ErrBoxKeysChanged) || !strings.Contains(hint.Of(err), "delete")) {
			t.Errorf("%s: CheckBoxKeys = %v (hint %q), want refused %v", c.name, err, hint.Of(err), c.bad)
		}
	}
}

// TestRefuseCloneMounts: a clone-mode box refuses mounts rather than ignoring them.
func TestRefuseCloneMounts(t *testing.T) {
	cfg := policy.Default()
	if err := refuseCloneMounts(cfg); err != nil {
		t.Errorf("control: no mounts: %v", err)
	}
	cfg.Mounts = []string{"~/data:/srv/data"}
	if err := refuseCloneMounts(cfg); err == nil || !strings.Contains(err.Error(), "~/data:/srv/data") {
		t.Errorf("clone mode with mounts = %v, want a refusal naming the entry", err)
	}
}

// TestStatusForwardedPorts: status reports the host ports of the ports entries the box was made
// with; the control is a box made without any.
func TestStatusForwardedPorts(t *testing.T) {
	h, m := statusHome(t)
	if err := m.WriteMeta(vm.Meta{Box: "b1", Network: "full"}); err != nil {
		t.Fatal(err)
	}
	if r := mustStatus(t, h, m, "b1"); len(r.ForwardedPorts) != 0 {
		t.Errorf("control: a box without ports forwards %v", r.ForwardedPorts)
	}
	if err := m.WriteMeta(vm.Meta{Box: "b1", Network: "full", Ports: []string{"18080:8080", "19000:3000"}}); err != nil {
		t.Fatal(err)
	}
	if r := mustStatus(t, h, m, "b1"); len(r.ForwardedPorts) != 2 || r.ForwardedPorts[0] != 18080 || r.ForwardedPorts[1] != 19000 {
		t.Errorf("forwarded ports = %v, want [18080 19000]", r.ForwardedPorts)
	}
}
