package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// relation is how a mount path stands to a trusted place; a place refuses a set of them.
type relation uint8

const (
	relIs relation = 1 << iota
	relContains
	relInside
	relLinked

	// refuseAll is for a place whose every file the host trusts: the mount may not be it,
	// contain it or lie inside it.
	refuseAll = relIs | relContains | relInside
	// refuseWhole is for a place the user's own work normally lies inside ($HOME, /home, /tmp):
	// the mount may lie inside it but may not be it or contain it.
	refuseWhole = relIs | relContains
)

// words is how an error says a relation.
func (r relation) words() string {
	switch r {
	case relIs:
		return "is"
	case relContains:
		return "contains"
	case relInside:
		return "lies inside"
	}
	return "is the target of"
}

// place is one location the host trusts, as the error names it.
type place struct {
	path   string   // as named, absolute
	name   string   // what it is, e.g. "git corral's state directory ($CORRAL_HOME)"
	why    string   // what the box could do with it
	refuse relation // the relations refused
	// system marks a host-wide directory. When $HOME lies inside it (a home under /var, or
	// root's home /root), paths inside $HOME stay allowed: $HOME is the user's own space.
	system bool

	v view
}

// Reasons shared by several places, in the words SECURITY.md uses.
const (
	whyHome   = "which holds the host's shell start-up files, ~/.gitconfig, ~/.ssh and every other dotfile"
	whyCorral = "which holds the trusted config.toml, the per-project files (egress, mounts, forward_env, ssh_agent), provision approvals, clone stores and Lima's home"
	whyLima   = "which holds every box's disk, SSH keys and the instance config the host runs QEMU from"
	whyCloud  = "which holds cloud credentials and config that runs credential helpers on the host"
	whyConfig = "which holds the host programs' configuration: git, shells, editors, systemd user units, autostart entries"
	whyLocal  = "which holds ~/.local/bin (on the host's PATH), ~/.local/share (systemd user units, keyrings, desktop entries) and ~/.local/lib (modules host interpreters import)"
	whyPath   = "which is on the host's PATH: the host runs the programs in it"
	whyCache  = "which holds build caches the host's tools reuse without checking them again (go-build, pip)"
	whySystem = "which the host's system programs and services run from or trust"
	whyTmp    = "where every local user and service writes: a box mounting it could plant files for all of them"
	whyGit    = "which git on the host reads, and runs the commands named in"
)

// userHome returns $HOME from getenv, or the account's home when it is unset.
func userHome(getenv func(string) string) (string, error) {
	dir := getenv("HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("find home directory: %w", err)
		}
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("find home directory: $HOME %q is not absolute", dir)
	}
	return filepath.Clean(dir), nil
}

// envPath returns the variable as an absolute path, or "" when it is unset. A relative value
// is taken from the working directory, as Lima and git take it.
func envPath(getenv func(string) string, name string) string {
	v := getenv(name)
	if v == "" {
		return ""
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return ""
	}
	return abs
}

// userPlaces lists what the host trusts in and around one user's home, most specific first:
// the first place a path stands in a refused relation to is the one reported.
func (h Home) userPlaces(home string, getenv func(string) string) []place {
	in := func(rel string) string { return filepath.Join(home, rel) }
	ps := []place{
		{path: h.Dir, name: "git corral's state directory ($CORRAL_HOME)", why: whyCorral, refuse: refuseAll},
		{path: in(".lima"), name: "Lima's default home (~/.lima)", why: whyLima, refuse: refuseAll},
		{path: in(".ssh"), name: "the host's SSH directory (~/.ssh)", why: "which holds private keys, authorized_keys and ssh_config (whose ProxyCommand runs on the host)", refuse: refuseAll},
		{path: in(".gnupg"), name: "GnuPG's home (~/.gnupg)", why: "which holds private keys and gpg-agent's configuration", refuse: refuseAll},
	}
	for _, d := range []string{".aws", ".azure", ".kube", ".docker", ".config/gcloud"} {
		ps = append(ps, place{path: in(d), name: "a cloud credential directory (~/" + d + ")", why: whyCloud, refuse: refuseAll})
	}
	if d := envPath(getenv, "LIMA_HOME"); d != "" {
		ps = append(ps, place{path: d, name: "Lima's home ($LIMA_HOME)", why: whyLima, refuse: refuseAll})
	}
	for _, env := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"} {
		if f := envPath(getenv, env); f != "" {
			ps = append(ps, place{path: filepath.Dir(f), name: "the directory of git's config $" + env, why: whyGit, refuse: refuseWhole})
		}
	}
	for _, x := range []struct{ env, def, name, why string }{
		{"XDG_CONFIG_HOME", ".config", "the host's configuration directory", whyConfig},
		{"XDG_DATA_HOME", ".local/share", "the host's data directory", whyLocal},
		{"XDG_CACHE_HOME", ".cache", "the host's cache directory", whyCache},
	} {
		if d := getenv(x.env); filepath.IsAbs(d) { // a relative XDG value is invalid and ignored
			if x.env == "XDG_CONFIG_HOME" {
				ps = append(ps, place{path: filepath.Join(d, "git"), name: "git's configuration directory ($XDG_CONFIG_HOME/git)", why: whyGit, refuse: refuseAll})
			}
			ps = append(ps, place{path: d, name: x.name + " ($" + x.env + ")", why: x.why, refuse: refuseAll})
		}
		ps = append(ps, place{path: in(x.def), name: x.name + " (~/" + x.def + ")", why: x.why, refuse: refuseAll})
	}
	return append(ps,
		place{path: in(".local"), name: "~/.local", why: whyLocal, refuse: refuseAll},
		place{path: in("bin"), name: "~/bin", why: whyPath, refuse: refuseAll},
		place{path: in("Library"), name: "macOS's per-user Library (~/Library)", why: "which holds the LaunchAgents the host runs at login, keychains and preferences", refuse: refuseAll},
		place{path: home, name: "the home directory ($HOME)", why: whyHome, refuse: refuseWhole},
	)
}

// systemPlaces lists the host-wide places. /var itself is refused whole only: /var/www and macOS's
// per-user temporary directories (/var/folders) are ordinary places for work.
func systemPlaces() []place {
	var ps []place
	for _, d := range []string{"/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
		"/opt/homebrew", "/opt/local", "/System", "/Library", "/var/lib", "/var/spool", "/var/log",
		"/var/cache", "/var/db", "/var/mail", "/proc", "/sys", "/dev", "/run", "/var/run", "/root"} {
		ps = append(ps, place{path: d, name: "the host directory", why: whySystem, refuse: refuseAll, system: true})
	}
	return append(ps,
		place{path: "/var", name: "the host directory", why: whySystem, refuse: refuseWhole},
		place{path: "/tmp", name: "the shared temporary directory", why: whyTmp, refuse: refuseWhole},
		place{path: "/var/tmp", name: "the shared temporary directory", why: whyTmp, refuse: refuseWhole},
		place{path: "/home", name: "the directory of every user's home", why: whyHome, refuse: refuseWhole},
		place{path: "/Users", name: "the directory of every user's home", why: whyHome, refuse: refuseWhole},
		place{path: "/", name: "the root of the host's filesystem", why: "which holds everything the host trusts", refuse: relIs},
	)
}

// trusted builds the views of every trusted place and of $HOME.
func (h Home) trusted(getenv func(string) string, fold bool) ([]place, view, error) {
	if h.Dir == "" || !filepath.IsAbs(h.Dir) {
		return nil, view{}, errors.New("check mount: the state directory is not resolved (call home.Resolve)")
	}
	dir, err := userHome(getenv)
	if err != nil {
		return nil, view{}, fmt.Errorf("check mount: %w", err)
	}
	homeView, err := newView(dir, false, fold)
	if err != nil {
		return nil, view{}, fmt.Errorf("check mount: resolve $HOME %q: %w", dir, err)
	}
	ps := append(h.userPlaces(dir, getenv), systemPlaces()...)
	for i := range ps {
		if ps[i].v, err = newView(ps[i].path, false, fold); err != nil {
			return nil, view{}, fmt.Errorf("check mount: resolve %s %q: %w", ps[i].name, ps[i].path, err)
		}
	}
	return ps, homeView, nil
}
