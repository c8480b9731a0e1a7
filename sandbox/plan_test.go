//go:build linux

package sandbox

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func testHost() Host {
	return Host{
		Home: "/home/u", CorralHome: "/home/u/.corral", Self: "/usr/local/bin/git-corral",
		Program: "/usr/bin/python3", Cwd: "/home/u/proj",
		Links:  map[string]string{"/bin": "usr/bin", "/lib": "usr/lib", "/lib64": "usr/lib64"},
		Etc:    []string{"/etc/passwd", "/etc/ld.so.cache"},
		Lookup: func(n string) (string, bool) { return map[string]string{"TOKEN": "s3cret"}[n], n == "TOKEN" },
		Secret: "broker-secret-value", BrokerDir: "/tmp/corral-sandbox-1",
	}
}

// TestPlanArgvCarriesNoValues: bubblewrap's argv is readable by every local process, so no
// variable value and no broker secret may be on it; they travel in the spec.
func TestPlanArgvCarriesNoValues(t *testing.T) {
	m := &Manifest{Env: []string{"TOKEN"}, Network: []string{"example.com"}}
	p, err := NewPlan(m, testHost(), []string{"python3", "-c", "print(1)"})
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(p.Args, " ")
	for _, secret := range []string{"s3cret", "broker-secret-value", "print(1)"} {
		if strings.Contains(argv, secret) {
			t.Errorf("bubblewrap's argv holds %q: %s", secret, argv)
		}
	}
	if !slices.Contains(p.Spec.Env, "TOKEN=s3cret") || p.Spec.Secret != "broker-secret-value" {
		t.Errorf("the spec lacks the value or the secret: %+v", p.Spec)
	}
	for _, flag := range []string{"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--clearenv", "--seccomp"} {
		if !slices.Contains(p.Args, flag) {
			t.Errorf("bubblewrap's argv lacks %s", flag)
		}
	}
}

// TestPlanRefusesHostState: no grant may expose $CORRAL_HOME, the whole host or the sandbox's
// own mounts; every refusal is listed.
func TestPlanRefusesHostState(t *testing.T) {
	cases := [][]string{{"/"}, {"/home/u"}, {"/home/u/.corral"}, {"/home/u/.corral/logs"}, {"/proc/1"}, {"/dev"}, {"/run/corral"}}
	for _, c := range cases {
		_, err := NewPlan(&Manifest{Read: c}, testHost(), []string{"true"})
		if !errors.Is(err, ErrGrant) {
			t.Errorf("fs.read %v: %v, want refused", c, err)
		}
	}
	_, err := NewPlan(&Manifest{Read: []string{"/"}, Write: []string{"/home"}, Exec: []string{"/home/u/.corral/x"}}, testHost(), []string{"true"})
	if err == nil || strings.Count(err.Error(), "grant refused") != 3 {
		t.Errorf("want all three refusals at once, got %v", err)
	}
	if _, err := NewPlan(&Manifest{Read: []string{"/home/u/proj"}, Write: []string{"/home/u/proj/out"}}, testHost(), []string{"true"}); err != nil {
		t.Errorf("a project grant beside $CORRAL_HOME: %v, want it allowed", err)
	}
}

// TestPlanMountOrder: parents are mounted before children (a read grant inside a write grant
// stays read-only), grants in /tmp after the scratch tmpfs, and the working directory is the
// host's only when a grant covers it.
func TestPlanMountOrder(t *testing.T) {
	m := &Manifest{Read: []string{"/home/u/proj/vendor", "/tmp/in"}, Write: []string{"/home/u/proj"}}
	p, err := NewPlan(m, testHost(), []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(p.Args, " ")
	w := strings.Index(argv, "--bind /home/u/proj /home/u/proj")
	r := strings.Index(argv, "--ro-bind /home/u/proj/vendor")
	tmp := strings.Index(argv, "--tmpfs /tmp")
	in := strings.Index(argv, "--ro-bind /tmp/in")
	if w < 0 || r < w || tmp < r || in < tmp {
		t.Errorf("mount order wrong: %s", argv)
	}
	if !strings.Contains(argv, "--chdir /home/u/proj ") {
		t.Errorf("working directory not the granted project: %s", argv)
	}
	p, _ = NewPlan(&Manifest{}, testHost(), []string{"true"})
	if !strings.Contains(strings.Join(p.Args, " "), "--chdir /tmp ") {
		t.Errorf("an ungranted working directory must not be mounted: %v", p.Args)
	}
}

// TestRunRefusesSymlinkedCorralHome: a grant is compared with where $CORRAL_HOME really is, so
// granting the target of a symlinked $CORRAL_HOME (or its parent) is refused.
func TestRunRefusesSymlinkedCorralHome(t *testing.T) {
	dir := t.TempDir()
	real := dir + "/data/corral"
	must(t, os.MkdirAll(real, 0o700))
	must(t, os.Symlink(real, dir+"/corral-link"))
	self := mustExecutable(t)
	for _, grant := range []string{dir + "/data", real} {
		_, err := Run(t.Context(), Options{Manifest: &Manifest{Read: []string{grant}}, Argv: []string{"/usr/bin/true"},
			Self: self, CorralHome: dir + "/corral-link", Cwd: dir, Lookup: func(string) (string, bool) { return "", false }})
		if !errors.Is(err, ErrGrant) {
			t.Errorf("fs.read %q with $CORRAL_HOME a symlink to %q: %v, want refused", grant, real, err)
		}
	}
	must(t, os.MkdirAll(dir+"/sibling", 0o755))
	_, err := Run(t.Context(), Options{Manifest: &Manifest{Read: []string{dir + "/sibling"}}, Argv: []string{"/usr/bin/true"},
		Self: self, CorralHome: dir + "/corral-link", Cwd: dir, Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Errorf("an unrelated grant: %v, want it to run", err)
	}
}
