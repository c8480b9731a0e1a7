package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a hermetic host: $HOME and $CORRAL_HOME in a temporary directory, with the trusted
// places the tables aim at and the look-alike siblings the controls use.
type fixture struct {
	root, home string
	env        map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{root: root, home: filepath.Join(root, "home")}
	f.env = map[string]string{"HOME": f.home, Env: filepath.Join(f.home, ".corral")}
	for _, d := range []string{".corral/clones/b.git", ".ssh", ".config/nvim", ".config/gcloud", ".aws/sso",
		".local/bin", ".sshfoo", ".config-old", "src/proj", "dotfiles"} {
		f.mkdir(t, filepath.Join(f.home, d))
	}
	return f
}

func (f *fixture) mkdir(t *testing.T, d string) string {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func (f *fixture) link(t *testing.T, target, name string) string {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
	return name
}

func (f *fixture) getenv(k string) string { return f.env[k] }

// check runs the guard the way the session flow will: Resolve, then the check.
func (f *fixture) check(t *testing.T, p string, project bool) error {
	t.Helper()
	h, err := Resolve(f.getenv)
	if err != nil {
		t.Fatal(err)
	}
	if project {
		return h.CheckProjectMount(p, f.getenv)
	}
	return h.CheckExtraMount(p, f.getenv)
}

// guardCase is one row: setup returns the path to check; want is "" for a control that must
// pass, else words the refusal must contain (the relation and the place).
type guardCase struct {
	name  string
	setup func(t *testing.T, f *fixture) string
	want  string
}

// hostileProject is the class "a project mount hands the box the host", in its spellings.
var hostileProject = []guardCase{
	{"is $HOME", func(t *testing.T, f *fixture) string { return f.home }, "is the home directory ($HOME)"},
	{"is $HOME with a trailing slash", func(t *testing.T, f *fixture) string { return f.home + "/" }, "is the home directory ($HOME)"},
	{"is $HOME spelled with ..", func(t *testing.T, f *fixture) string { return f.home + "/src/../src/proj/../.." }, "is the home directory ($HOME)"},
	{"ancestor of $HOME", func(t *testing.T, f *fixture) string { return f.root }, "contains the home directory ($HOME)"},
	{"is /", func(t *testing.T, f *fixture) string { return "/" }, `is the root of the host's filesystem "/"`},
	{"is /tmp", func(t *testing.T, f *fixture) string { return "/tmp" }, `is the shared temporary directory "/tmp"`},
	{`is the directory of every user's home "/home"`, func(t *testing.T, f *fixture) string { return "/home" }, `is the directory of every user's home "/home"`},
	{"contains $CORRAL_HOME", func(t *testing.T, f *fixture) string {
		f.env[Env] = f.mkdir(t, filepath.Join(f.home, "proj", ".corral"))
		return filepath.Join(f.home, "proj")
	}, "contains git corral's state directory ($CORRAL_HOME)"},
	{"contains a $CORRAL_HOME not made yet", func(t *testing.T, f *fixture) string {
		f.env[Env] = filepath.Join(f.home, "src", "proj", ".corral")
		return filepath.Join(f.home, "src", "proj")
	}, "contains git corral's state directory ($CORRAL_HOME)"},
	{"lies inside $CORRAL_HOME", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".corral", "clones", "b.git") },
		"lies inside git corral's state directory ($CORRAL_HOME)"},
	{"is ~/.ssh", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".ssh") }, "is the host's SSH directory (~/.ssh)"},
	{"is ~/.ssh spelled with .. and slashes", func(t *testing.T, f *fixture) string { return f.home + "/src/proj/../..//.ssh/./" },
		"is the host's SSH directory (~/.ssh)"},
	{"lies inside ~/.config", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".config", "nvim") },
		"lies inside the host's configuration directory (~/.config)"},
	{"lies inside $XDG_CONFIG_HOME", func(t *testing.T, f *fixture) string {
		f.env["XDG_CONFIG_HOME"] = f.mkdir(t, filepath.Join(f.root, "xdg"))
		return f.mkdir(t, filepath.Join(f.root, "xdg", "fish"))
	}, "lies inside the host's configuration directory ($XDG_CONFIG_HOME)"},
	{"is $XDG_CONFIG_HOME/git", func(t *testing.T, f *fixture) string {
		f.env["XDG_CONFIG_HOME"] = f.mkdir(t, filepath.Join(f.root, "xdg"))
		return f.mkdir(t, filepath.Join(f.root, "xdg", "git"))
	}, "is git's configuration directory ($XDG_CONFIG_HOME/git)"},
	{"is the directory of $GIT_CONFIG_GLOBAL", func(t *testing.T, f *fixture) string {
		f.env["GIT_CONFIG_GLOBAL"] = filepath.Join(f.mkdir(t, filepath.Join(f.root, "gitcfg")), "config")
		return filepath.Join(f.root, "gitcfg")
	}, "is the directory of git's config $GIT_CONFIG_GLOBAL"},
	{"lies inside a cloud credential directory", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".aws", "sso") },
		"lies inside a cloud credential directory (~/.aws)"},
	{"is gcloud's directory, not just ~/.config", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".config", "gcloud") },
		"is a cloud credential directory (~/.config/gcloud)"},
	{"lies inside ~/.local", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".local", "bin") },
		"lies inside ~/.local"},
	{"is ~/.lima", func(t *testing.T, f *fixture) string { return f.mkdir(t, filepath.Join(f.home, ".lima")) }, "is Lima's default home (~/.lima)"},
	{"under /tmp, contains $LIMA_HOME", func(t *testing.T, f *fixture) string {
		dir := f.mkdir(t, filepath.Join(f.root, "x"))
		f.env["LIMA_HOME"] = filepath.Join(dir, "lima")
		return dir
	}, "contains Lima's home ($LIMA_HOME)"},
	{"symlink whose target is $HOME", func(t *testing.T, f *fixture) string { return f.link(t, f.home, filepath.Join(f.root, "h")) },
		"is the home directory ($HOME)"},
	{"symlink chain into ~/.ssh", func(t *testing.T, f *fixture) string {
		f.link(t, filepath.Join(f.home, ".ssh"), filepath.Join(f.root, "b"))
		f.link(t, "b", filepath.Join(f.root, "a"))
		return filepath.Join(f.root, "a")
	}, "is the host's SSH directory (~/.ssh)"},
	{"relative symlink through $HOME to $CORRAL_HOME", func(t *testing.T, f *fixture) string {
		return f.link(t, "home/.corral/clones", filepath.Join(f.root, "c"))
	}, "lies inside git corral's state directory ($CORRAL_HOME)"},
	{"dotfiles repository ~/.bashrc links into", func(t *testing.T, f *fixture) string {
		f.link(t, "dotfiles/bashrc", filepath.Join(f.home, ".bashrc")) // dangling until the box writes it
		return filepath.Join(f.home, "dotfiles")
	}, "is the target of the host's symlink"},
	{"dotfiles repository a ~/.config entry links into", func(t *testing.T, f *fixture) string {
		f.link(t, filepath.Join(f.home, "dotfiles"), filepath.Join(f.home, ".config", "fish"))
		return filepath.Join(f.home, "dotfiles")
	}, "is the target of the host's symlink"},
	{"lies inside /etc", func(t *testing.T, f *fixture) string { return "/etc/ssh" }, "lies inside the host directory \"/etc\""},
	{"lies inside /usr", func(t *testing.T, f *fixture) string { return "/usr/local/src/proj" }, "lies inside the host directory \"/usr\""},
	{"lies inside /proc through /proc/self", func(t *testing.T, f *fixture) string { return "/proc/self" }, "lies inside the host directory \"/proc\""},
	{"lies inside /root when $HOME is elsewhere", func(t *testing.T, f *fixture) string { return "/root/src/proj" }, "lies inside the host directory \"/root\""},
	{"holds a NUL", func(t *testing.T, f *fixture) string { return f.home + "/src/proj\x00" }, "contains a NUL or a line break"},
	{"holds a newline", func(t *testing.T, f *fixture) string { return f.home + "/src/proj\n/etc" }, "contains a NUL or a line break"},
	{"runs through a dangling symlink", func(t *testing.T, f *fixture) string {
		return filepath.Join(f.link(t, filepath.Join(f.home, "gone"), filepath.Join(f.root, "d")), "proj")
	}, "runs through the symlink"},
}

// allowedProject are the controls: the same probes with nothing trusted in the way.
var allowedProject = []guardCase{
	{"~/src/proj", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, "src", "proj") }, ""},
	{"~/src/proj/ with .. and a trailing slash", func(t *testing.T, f *fixture) string { return f.home + "/src/x/../proj/" }, ""},
	{"/srv/proj", func(t *testing.T, f *fixture) string { return "/srv/proj" }, ""},
	{"/tmp/x/proj", func(t *testing.T, f *fixture) string { return f.mkdir(t, filepath.Join(f.root, "x", "proj")) }, ""},
	{"~/.sshfoo, a sibling named like ~/.ssh", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".sshfoo") }, ""},
	{"~/.config-old, a sibling named like ~/.config", func(t *testing.T, f *fixture) string { return filepath.Join(f.home, ".config-old") }, ""},
	{"symlink whose target is ~/src/proj", func(t *testing.T, f *fixture) string {
		return f.link(t, filepath.Join(f.home, "src", "proj"), filepath.Join(f.root, "p"))
	}, ""},
	{"~/dotfiles that only a non-hidden shortcut in $HOME links to", func(t *testing.T, f *fixture) string {
		f.link(t, "dotfiles", filepath.Join(f.home, "df"))
		return filepath.Join(f.home, "dotfiles")
	}, ""},
	{"under /tmp, beside $LIMA_HOME", func(t *testing.T, f *fixture) string {
		f.env["LIMA_HOME"] = filepath.Join(f.root, "x", "lima")
		return f.mkdir(t, filepath.Join(f.root, "x", "proj"))
	}, ""},
	{"$CORRAL_HOME's parent lies beside the project", func(t *testing.T, f *fixture) string {
		f.env[Env] = filepath.Join(f.home, "proj2", ".corral")
		return filepath.Join(f.home, "src", "proj")
	}, ""},
	{"inside /root when $HOME is /root", func(t *testing.T, f *fixture) string {
		f.env["HOME"] = "/root"
		return "/root/src/proj"
	}, ""},
}

func TestCheckProjectMount(t *testing.T) {
	runGuard(t, append(append([]guardCase{}, hostileProject...), allowedProject...), true)
}

func runGuard(t *testing.T, cases []guardCase, project bool) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			p := tc.setup(t, f)
			err := f.check(t, p, project)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("check %q: %v, want it allowed", p, err)
				}
				return
			}
			var he *HostPathError
			if !errors.Is(err, ErrHostPath) || !errors.As(err, &he) {
				t.Fatalf("check %q: %v, want a *HostPathError (ErrHostPath)", p, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check %q:\n%v\nwant it to say %q", p, err, tc.want)
			}
		})
	}
}
