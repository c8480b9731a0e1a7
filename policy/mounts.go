package policy

// This file is the syntax of the trusted-only `mounts` and `ports` entries. Its rules:
//   - a mounts entry is HOSTPATH:GUESTPATH, optionally followed by :ro or :rw; it is read-only
//     unless :rw is written;
//   - HOSTPATH is absolute and clean, or ~ or ~/PATH (the host user's home directory, expanded
//     by the session before the mount guard, home.CheckExtraMount, looks at it); relative
//     paths, `..`, `.` and empty components are refused, so what is checked is what is written;
//   - GUESTPATH is absolute and clean and lies strictly inside /srv, /mnt, /opt, /media or
//     /data: a mount anywhere else could cover the box's system (/, /etc, /usr, /proc…), the
//     box user's home (~/.ssh holds the keys the host's sessions log in with) or the project
//     path, which the session also refuses (ResolveMount's caller knows it);
//   - no entry holds a control character or is longer than MaxMountEntry bytes, and no two
//     entries share a guest path or nest one inside the other;
//   - a ports entry is HOSTPORT:GUESTPORT, both plain decimal numbers; HOSTPORT is at least
//     1024 (Lima runs as the user and could not bind a lower one) and no two entries share a
//     HOSTPORT. The host side is always 127.0.0.1 (vm/template.go): no address is written.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-corral/git-corral/internal/visible"
)

// MaxMountEntry is the longest mounts entry accepted (PATH_MAX on Linux).
const MaxMountEntry = 4096

// GuestMountRoots are the guest directories extra mounts may lie inside.
var GuestMountRoots = []string{"/srv", "/mnt", "/opt", "/media", "/data"}

// Mount is one parsed `mounts` entry.
type Mount struct {
	// Entry is the entry as written.
	Entry string
	// Host is the host path as written (may start with ~); Guest is the guest path.
	Host, Guest string
	// Writable is true only when the entry ends in :rw.
	Writable bool
}

// ParseMount parses one `mounts` entry, refusing every form the rules above exclude.
func ParseMount(entry string) (Mount, error) {
	bad := func(format string, a ...any) (Mount, error) {
		return Mount{}, fmt.Errorf("mounts entry %q: "+format, append([]any{entry}, a...)...)
	}
	if len(entry) > MaxMountEntry {
		return bad("longer than %d bytes", MaxMountEntry)
	}
	if visible.Has(entry) || strings.ContainsRune(entry, 0) {
		return bad("holds a control character (NUL, newline…)")
	}
	parts := strings.Split(entry, ":")
	m := Mount{Entry: entry}
	if n := len(parts); n == 3 && (parts[2] == "ro" || parts[2] == "rw") {
		m.Writable = parts[2] == "rw"
		parts = parts[:2]
	}
	if len(parts) != 2 {
		return bad("want HOSTPATH:GUESTPATH, HOSTPATH:GUESTPATH:ro or HOSTPATH:GUESTPATH:rw (paths may not hold ':')")
	}
	m.Host, m.Guest = parts[0], parts[1]
	if why := hostPathProblem(m.Host); why != "" {
		return bad("host path %q %s", m.Host, why)
	}
	if why := guestPathProblem(m.Guest); why != "" {
		return bad("guest path %q %s", m.Guest, why)
	}
	return m, nil
}

// hostPathProblem says what is wrong with a host path, or "".
func hostPathProblem(p string) string {
	rest := p
	if p == "~" {
		return ""
	}
	if strings.HasPrefix(p, "~/") {
		rest = "/" + p[2:]
	}
	if !filepath.IsAbs(rest) || filepath.Clean(rest) != rest || rest == "/" && p != "/" {
		return "must be absolute (or start with ~/) and clean: no relative path, `..`, `.`, `//` or trailing /"
	}
	return ""
}

// guestPathProblem says what is wrong with a guest path, or "".
func guestPathProblem(p string) string {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "must be absolute and clean: no relative path, `..`, `.`, `//` or trailing /"
	}
	for _, r := range GuestMountRoots {
		if strings.HasPrefix(p, r+"/") {
			return ""
		}
	}
	return fmt.Sprintf("must lie inside %s: anywhere else a mount could cover the box's system, its user's home or the project",
		strings.Join(GuestMountRoots, ", "))
}

// ParseMounts parses every entry and refuses two that share or nest guest paths; the error
// lists every problem.
func ParseMounts(entries []string) ([]Mount, error) {
	var out []Mount
	var errs []error
	for _, e := range entries {
		m, err := ParseMount(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range out {
			if o.Guest == m.Guest || strings.HasPrefix(m.Guest, o.Guest+"/") || strings.HasPrefix(o.Guest, m.Guest+"/") {
				errs = append(errs, fmt.Errorf("mounts entry %q: guest path %q overlaps entry %q's %q: each entry needs its own guest directory", e, m.Guest, o.Entry, o.Guest))
			}
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

// Port is one parsed `ports` entry.
type Port struct {
	// Entry is the entry as written.
	Entry string
	// Host is the port on the host's 127.0.0.1; Guest the port in the box.
	Host, Guest int
}

// ParsePort parses one `ports` entry.
func ParsePort(entry string) (Port, error) {
	h, g, ok := strings.Cut(entry, ":")
	if !ok || !portOK(h) || !portOK(g) {
		return Port{}, fmt.Errorf("ports entry %q: want HOSTPORT:GUESTPORT, two numbers from 1 to 65535 (the host side is always 127.0.0.1; no address may be written)", entry)
	}
	p := Port{Entry: entry}
	p.Host, _ = strconv.Atoi(h)
	p.Guest, _ = strconv.Atoi(g)
	if p.Host < 1024 {
		return Port{}, fmt.Errorf("ports entry %q: host port %d is below 1024, which only root may listen on; choose a HOSTPORT from 1024 to 65535", entry, p.Host)
	}
	return p, nil
}

// ParsePorts parses every entry and refuses two with the same host port; the error lists every
// problem.
func ParsePorts(entries []string) ([]Port, error) {
	var out []Port
	var errs []error
	for _, e := range entries {
		p, err := ParsePort(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range out {
			if o.Host == p.Host {
				errs = append(errs, fmt.Errorf("ports entry %q: host port %d is also forwarded by entry %q", e, p.Host, o.Entry))
			}
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}
