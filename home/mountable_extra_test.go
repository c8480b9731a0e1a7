package home

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/git-corral/git-corral/internal/casefs/casefstest"
)

// hostileExtra is the class "a mounts entry hands the box the host" (issue #20): the project's
// rules, and host services reached through a socket or a device.
var hostileExtra = []guardCase{
	{"is $HOME", func(t *testing.T, f *fixture) string { return f.home }, "is the home directory ($HOME)"},
	{"is /", func(t *testing.T, f *fixture) string { return "/" }, `is the root of the host's filesystem "/"`},
	{"is /etc", func(t *testing.T, f *fixture) string { return "/etc" }, "is the host directory \"/etc\""},
	{"is ~/.ssh", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".ssh") }, "is the host's SSH directory (~/.ssh)"},
	{"lies inside ~/.gnupg", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".gnupg", "private-keys-v1.d") },
		"lies inside GnuPG's home (~/.gnupg)"},
	{"a file in ~/.aws", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".aws", "credentials") },
		"lies inside a cloud credential directory (~/.aws)"},
	{"is ~/.azure", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".azure") }, "is a cloud credential directory (~/.azure)"},
	{"lies inside ~/.kube", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".kube", "config") },
		"lies inside a cloud credential directory (~/.kube)"},
	{"is ~/.docker", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".docker") }, "is a cloud credential directory (~/.docker)"},
	{"lies inside ~/.config/gcloud", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".config", "gcloud", "x") },
		"lies inside a cloud credential directory (~/.config/gcloud)"},
	{"is $CORRAL_HOME", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".corral") }, "is git corral's state directory ($CORRAL_HOME)"},
	{"the Docker socket under /var/run", func(t *testing.T, f *fixture) string { return "/var/run/docker.sock" }, "lies inside the host directory \"/run\""},
	{"the Docker socket under /run", func(t *testing.T, f *fixture) string { return "/run/docker.sock" }, "lies inside the host directory \"/run\""},
	{"a socket file anywhere", func(t *testing.T, f *fixture) string {
		p := filepath.Join(f.root, "agent.sock")
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return p
	}, "is a socket"},
	{"a symlink to a socket", func(t *testing.T, f *fixture) string {
		p := filepath.Join(f.root, "agent.sock")
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return f.link(t, p, filepath.Join(f.root, "data"))
	}, "is a socket"},
	{"a FIFO", func(t *testing.T, f *fixture) string {
		p := filepath.Join(f.root, "fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}, "is a FIFO"},
	{"a device node outside /dev", func(t *testing.T, f *fixture) string {
		p := filepath.Join(f.root, "null")
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3); err != nil {
			t.Skipf("mknod needs root: %v", err) // the /dev rows cover devices for everyone
		}
		return p
	}, "is a device"},
	{"is /dev", func(t *testing.T, f *fixture) string { return "/dev" }, "is the host directory \"/dev\""},
	{"symlink chain into ~/.ssh", func(t *testing.T, f *fixture) string {
		key := filepath.Join(f.home, ".ssh", "id_ed25519")
		if err := os.WriteFile(key, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		f.link(t, key, filepath.Join(f.root, "b"))
		return f.link(t, "b", filepath.Join(f.root, "a"))
	}, "lies inside the host's SSH directory (~/.ssh)"},
	{"ancestor of $HOME with ..", func(t *testing.T, f *fixture) string { return f.home + "/.ssh/../.." }, "contains the home directory ($HOME)"},
}

// allowedExtra are the controls: data directories and files with nothing trusted in the way.
var allowedExtra = []guardCase{
	{"/srv/data", func(t *testing.T, f *fixture) string { return "/srv/data" }, ""},
	{"a data directory in $HOME", func(t *testing.T, f *fixture) string { return f.mkdir(t, filepath.Join(f.home, "data")) }, ""},
	{"a regular file under /tmp", func(t *testing.T, f *fixture) string {
		p := filepath.Join(f.root, "x.txt")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}, ""},
	{"~/.sshfoo", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".sshfoo") }, ""},
	{"~/.config-old", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".config-old") }, ""},
	{"~/.dockerfiles, named like ~/.docker", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".dockerfiles") }, ""},
}

func TestCheckExtraMount(t *testing.T) {
	runGuard(t, append(append([]guardCase{}, hostileExtra...), allowedExtra...), false)
}

// TestCheckMountCaseInsensitive puts $HOME on a case-insensitive filesystem (internal/casefs),
// where ~/.SSH and ~/.ssh are one directory: other spellings are refused, and a look-alike
// sibling that folds differently is allowed.
func TestCheckMountCaseInsensitive(t *testing.T) {
	mnt := casefstest.Dir(t)
	home := filepath.Join(mnt, "home")
	for _, d := range []string{".ssh", ".corral", "src/proj", ".sshfoo"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"HOME": home, Env: filepath.Join(home, ".corral")}
	h, err := Resolve(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(mnt, "HOME"), "is the home directory ($HOME)"},
		{filepath.Join(home, ".SSH"), "is the host's SSH directory (~/.ssh)"},
		{filepath.Join(mnt, "Home", ".Ssh", "keys"), "lies inside the host's SSH directory (~/.ssh)"},
		{filepath.Join(home, ".CORRAL"), "is git corral's state directory ($CORRAL_HOME)"},
		{filepath.Join(home, ".Aws"), "is a cloud credential directory (~/.aws)"}, // not made: compared folded
		{filepath.Join(home, "SRC", "proj"), ""},
		{filepath.Join(home, ".SSHFOO"), ""},
	} {
		err := h.CheckProjectMount(tc.path, func(k string) string { return env[k] })
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("check %q: %v, want it allowed", tc.path, err)
		case tc.want != "" && (!errors.Is(err, ErrHostPath) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("check %q: %v, want a refusal saying %q", tc.path, err, tc.want)
		}
	}
}

// TestHostPathErrorSaysWhatToDo checks the refusal names the path, the place, and the next step.
func TestHostPathErrorSaysWhatToDo(t *testing.T) {
	f := newFixture(t)
	err := f.check(t, f.home, true)
	var he *HostPathError
	if !errors.As(err, &he) {
		t.Fatalf("check $HOME: %v, want a *HostPathError", err)
	}
	if he.Entry != "project" || he.Place != f.home || he.Relation != "is" {
		t.Errorf("error fields = %+v", he)
	}
	if !strings.Contains(he.Hint(), "git corral clone") || !strings.Contains(he.Hint(), `source = "clone"`) {
		t.Errorf("project hint %q does not suggest clone mode", he.Hint())
	}
	p := filepath.Join(f.home, ".ssh")
	if err := f.check(t, p, false); !errors.As(err, &he) || !strings.Contains(he.Hint(), "remove "+`"`+p+`" from mounts`) {
		t.Errorf("mounts hint for %q: %v", p, err)
	}
	if err := f.check(t, "/x\n\x1b[31m", true); err == nil || strings.ContainsAny(err.Error(), "\n\x1b") {
		t.Errorf("a path with control characters is echoed raw or allowed: %q", err)
	}
}
