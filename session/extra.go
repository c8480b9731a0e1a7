package session

// This file is the host side of the trusted-only `mounts` and `ports` keys, checked before
// anything is looked up or booted. Its rules:
//   - every mounts entry parses (policy.ParseMounts); its host path, ~ expanded from $HOME,
//     passes the mount guard (home.CheckExtraMount: not what the host trusts, not a socket or
//     device, not through a symlink into either); it is an existing directory; it is not, does
//     not hold and does not lie inside the project (a second view of the checkout would bypass
//     the git shadow, hide and readonly_project); its guest path does not overlap the project
//     path. The template gets the host path with its symlinks resolved, so Lima mounts what was
//     checked;
//   - a clone-mode box mounts nothing of the host, so mounts there is refused, not ignored;
//   - every ports entry parses (policy.ParsePorts), and before a box that is not running is
//     started each host port must be free on 127.0.0.1: a port in use is an error naming the
//     entry, not a forward that silently never appears;
//   - an existing box keeps the mounts and ports it was created with (Lima's instance file is
//     fixed at creation). When the configuration now says otherwise, the session is refused
//     with the fix (delete and start again): a box never keeps a mount the configuration no
//     longer allows, and never runs without a mount or port the user believes it has.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// ExtraMounts checks cfg's mounts entries for the project at projectDir (see the rules above)
// and returns them as the template takes them. projectDir is "" when there is no checkout (a
// preview of a file alone): the entries are then not compared with a project. getenv supplies
// HOME (nil: os.Getenv).
func ExtraMounts(h home.Home, cfg *policy.Config, projectDir string, getenv func(string) string) ([]vm.ExtraMount, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	ms, err := policy.ParseMounts(cfg.Mounts)
	if err != nil {
		return nil, hint.With(err, "fix the entry in the trusted file that sets mounts ('git corral config' shows where)")
	}
	var out []vm.ExtraMount
	for _, m := range ms {
		e, err := extraMount(h, m, projectDir, getenv)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// extraMount checks one parsed entry.
func extraMount(h home.Home, m policy.Mount, projectDir string, getenv func(string) string) (vm.ExtraMount, error) {
	host, err := expandHome(m.Host, getenv)
	if err != nil {
		return vm.ExtraMount{}, fmt.Errorf("mounts entry %q: %w", m.Entry, err)
	}
	if err := h.CheckExtraMount(host, getenv); err != nil {
		return vm.ExtraMount{}, mountHint(fmt.Errorf("mounts entry %q: %w", m.Entry, err))
	}
	real, err := filepath.EvalSymlinks(host)
	if err != nil {
		return vm.ExtraMount{}, hint.With(fmt.Errorf("mounts entry %q: %w", m.Entry, err), "create the directory, or remove the entry from mounts")
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return vm.ExtraMount{}, hint.With(fmt.Errorf("mounts entry %q: host path %q is not a directory", m.Entry, real),
			"mount the directory that holds it")
	}
	if projectDir == "" { // no checkout (config check of a file): nothing to overlap
		return vm.ExtraMount{Entry: m.Entry, Host: real, Guest: m.Guest, Writable: m.Writable}, nil
	}
	if rel := relation(real, projectDir); rel != "" {
		return vm.ExtraMount{}, hint.With(fmt.Errorf("mounts entry %q: host path %q %s the project %q, a second view of it that the git shadow, hide and readonly_project do not cover", m.Entry, real, rel, projectDir),
			"the project is mounted already; remove the entry, or mount a directory outside the project")
	}
	if rel := relation(m.Guest, projectDir); rel != "" {
		return vm.ExtraMount{}, hint.With(fmt.Errorf("mounts entry %q: guest path %q %s the project path %q", m.Entry, m.Guest, rel, projectDir),
			"choose another GUESTPATH inside "+strings.Join(policy.GuestMountRoots, ", "))
	}
	return vm.ExtraMount{Entry: m.Entry, Host: real, Guest: m.Guest, Writable: m.Writable}, nil
}

// expandHome turns ~ and ~/PATH into paths under $HOME.
func expandHome(p string, getenv func(string) string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	hd := getenv("HOME")
	if !filepath.IsAbs(hd) {
		return "", fmt.Errorf("host path %q needs $HOME, which is %q, not an absolute path", p, hd)
	}
	return filepath.Join(hd, strings.TrimPrefix(p, "~")), nil
}

// relation says how a stands to b: "is", "holds", "lies inside", or "" for none.
func relation(a, b string) string {
	switch {
	case a == b:
		return "is"
	case strings.HasPrefix(b, a+"/") || a == "/":
		return "holds"
	case strings.HasPrefix(a, b+"/"):
		return "lies inside"
	}
	return ""
}

// refuseCloneMounts refuses mounts for a clone-mode box, which mounts nothing of the host.
func refuseCloneMounts(cfg *policy.Config) error {
	if len(cfg.Mounts) == 0 {
		return nil
	}
	return hint.With(fmt.Errorf("mounts %q: a clone-mode box mounts nothing of the host", cfg.Mounts),
		`remove mounts from the trusted file for this project, or use source = "mount"`)
}

// PortsFree refuses a ports entry whose host port something already listens on at 127.0.0.1.
func PortsFree(cfg *policy.Config) error {
	ps, err := policy.ParsePorts(cfg.Ports)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range ps {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Host)))
		if err != nil {
			errs = append(errs, fmt.Errorf("ports entry %q: host port 127.0.0.1:%d is already in use: %w", p.Entry, p.Host, err))
			continue
		}
		l.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return hint.With(err, "stop what listens there (another program, or another box forwarding the same port), or choose another HOSTPORT")
	}
	return nil
}

// ErrBoxKeysChanged is matched by the refusal of a box whose mounts or ports are not what the
// configuration now says.
var ErrBoxKeysChanged = errors.New("the box was created with other mounts or ports")

// CheckBoxKeys refuses an existing box whose recorded mounts or ports differ from cfg's.
func CheckBoxKeys(box string, meta vm.Meta, cfg *policy.Config) error {
	var diffs []string
	for _, k := range []struct {
		key       string
		had, want []string
	}{{"mounts", meta.Mounts, cfg.Mounts}, {"ports", meta.Ports, cfg.Ports}} {
		if !sameSet(k.had, k.want) {
			diffs = append(diffs, fmt.Sprintf("%s %q, the configuration now says %q", k.key, orNone(k.had), orNone(k.want)))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return hint.With(fmt.Errorf("box %s: %w: it has %s", box, ErrBoxKeysChanged, strings.Join(diffs, "; and ")),
		"a box's mounts and ports are fixed when it is created: 'git corral delete --yes' (work kept only in the box is lost) and start again, or restore the old entries")
}

// sameSet reports whether a and b hold the same entries, in any order.
func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// orNone is v, or an empty (not nil) list so that errors print [] rather than nothing.
func orNone(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// checkHostKeys refuses b's box when it exists with other mounts or ports than b's
// configuration, and, when it is not running, a ports entry whose host port is in use.
func (b *Box) checkHostKeys(meta vm.Meta, st vm.Status) error {
	if st.Exists() {
		if err := CheckBoxKeys(b.Name, meta, b.Config); err != nil {
			return err
		}
	}
	if st.Status == "Running" {
		return nil // Lima's host agent holds the box's own forwards
	}
	return PortsFree(b.Config)
}
