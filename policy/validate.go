package policy

// This file checks each value on its own, in every layer. Rules:
//   - enumerations accept exactly the values of the key's Order;
//   - sizes are an integer and a binary unit (KiB, MiB, GiB, TiB), nothing Lima would guess at;
//   - repository paths (provision, hide, box_dirs) are relative, clean, never `.git` in any
//     case, never escaping the top level through `..` or, when the path exists, a symlink;
//     provision scripts must be regular files reached through no symlink at all;
//   - names that reach a shell, an environment or a template are checked against narrow
//     patterns; no value may carry a control character except env values' newlines and tabs;
//   - egress entries are checked for shape only (the broker parses them): host, *.suffix,
//     host:port, IP, CIDR, IP:port, [IPv6]:port.

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/internal/lazyre"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/login/loginname"
)

var (
	sizeRE    = lazyre.New(`^([1-9][0-9]{0,6})(KiB|MiB|GiB|TiB)$`)
	pkgRE     = lazyre.New(`^[a-z0-9][a-z0-9+.-]{0,99}$`)
	envNameRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	brokerRE  = lazyre.New(`^[a-z][a-z0-9-]{0,31}$`)
	boxNameRE = lazyre.New(`^[a-z][a-z0-9-]{0,39}$`)
	labelRE   = lazyre.New(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// checkValue returns what is wrong with s's value, or "". top is the repository's top level
// ("" when unknown: paths are then checked only lexically).
func checkValue(s setting, top string) string {
	spec := s.spec
	if isSandboxKey(spec) {
		return checkSandboxValue(s)
	}
	if spec.Kind == KindRoutes {
		return checkRouteValue(s)
	}
	if len(spec.Order) > 0 {
		if spec.rank(s.value) < 0 {
			return fmt.Sprintf("must be one of %s, not %q", strings.Join(spec.Order, ", "), s.value)
		}
		return ""
	}
	switch v := s.value.(type) {
	case string:
		return checkString(spec.Name, s.mapKey, v)
	case int:
		if spec.Name == "cpus" && (v < 1 || v > 1024) {
			return fmt.Sprintf("must be between 1 and 1024, not %d", v)
		}
	case []string:
		for _, x := range v {
			if p := checkItem(spec.Name, x, top); p != "" {
				return p
			}
		}
		return checkItemSet(spec.Name, v)
	}
	return ""
}

// checkString checks a string value (or, for tables, one entry named mapKey).
func checkString(key, mapKey, v string) string {
	switch key {
	case "memory", "disk":
		if !sizeRE.MatchString(v) {
			return fmt.Sprintf("must be a size such as \"4GiB\" (KiB, MiB, GiB, TiB), not %q", v)
		}
		return ""
	case "env":
		if !envNameRE.MatchString(mapKey) {
			return fmt.Sprintf("has an invalid variable name %q", mapKey)
		}
		if len(v) > 4096 || visible.Has(strings.NewReplacer("\n", "", "\t", "").Replace(v)) {
			return fmt.Sprintf("%s has a control character or is longer than 4096 bytes", mapKey)
		}
		return ""
	case "env_from_host":
		if !envNameRE.MatchString(mapKey) || !envNameRE.MatchString(v) {
			return fmt.Sprintf("must map variable names to variable names, not %q = %q", mapKey, v)
		}
		return ""
	case "git_tokens":
		if checkGitHost(mapKey) != "" || !envNameRE.MatchString(v) {
			return fmt.Sprintf("must map git host names (with an optional :port) to variable names, not %q = %q", mapKey, v)
		}
		return ""
	case "agent_versions":
		if err := agents.CheckPin(mapKey, v); err != nil {
			return err.Error()
		}
		return ""
	case "agent_login":
		if v != "" && v != "none" && loginname.Check(v) != nil {
			return fmt.Sprintf("must name a host-held login ([a-z0-9][a-z0-9-]*, at most 63; 'git corral agents logins' lists them) or be \"none\", not %q", v)
		}
		return ""
	case "name":
		if v != "" && !boxNameRE.MatchString(v) {
			return fmt.Sprintf("must be a box name ([a-z][a-z0-9-]*, at most 40), not %q", v)
		}
		return ""
	}
	if visible.Has(v) || len(v) > 4096 {
		return fmt.Sprintf("has a control character or is longer than 4096 bytes: %q", v)
	}
	return ""
}

// checkItem checks one element of an array key.
func checkItem(key, v, top string) string {
	switch key {
	case "packages":
		if !pkgRE.MatchString(v) {
			return fmt.Sprintf("has an invalid Debian package name %q", v)
		}
	case "provision", "hide", "box_dirs":
		return checkRepoPath(v, top, key == "provision")
	case "egress":
		if p := checkEgress(v); p != "" {
			return fmt.Sprintf("has an invalid entry %q: %s", v, p)
		}
	case "forward_env":
		if !envNameRE.MatchString(v) {
			return fmt.Sprintf("has an invalid variable name %q", v)
		}
	case "git_push":
		return checkRefPattern(v)
	case "egress_presets":
		return checkPresetName(v)
	case "forge_api_allow":
		return checkForgeClass(v)
	case "api_brokers":
		if !brokerRE.MatchString(v) {
			return fmt.Sprintf("has an invalid broker name %q", v)
		}
	case "ports":
		if _, err := ParsePort(v); err != nil {
			return "has an invalid " + err.Error()
		}
	case "mounts":
		if _, err := ParseMount(v); err != nil {
			return "has an invalid " + err.Error()
		}
	}
	return ""
}

// checkRepoPath confines a repository-relative path.
func checkRepoPath(p, top string, regular bool) string {
	bad := func(why string) string { return fmt.Sprintf("has the path %q, which %s", p, why) }
	switch {
	case p == "" || visible.Has(p) || strings.ContainsRune(p, '\\'):
		return bad("is empty or holds a control character or backslash")
	case filepath.IsAbs(p):
		return bad("is absolute; paths are relative to the repository's top level")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return bad("leaves the repository")
		}
		if strings.EqualFold(strings.TrimRight(part, ". "), ".git") {
			return bad("names git metadata, which the box never controls")
		}
	}
	if top == "" {
		return ""
	}
	full := filepath.Join(top, p)
	if regular {
		return checkNoSymlink(top, p, bad)
	}
	if real, ok := resolveExisting(top, full); ok {
		realTop, err := filepath.EvalSymlinks(top)
		if err != nil {
			return bad("cannot be checked: " + err.Error())
		}
		rel, err := filepath.Rel(realTop, real)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return bad("resolves outside the repository through a symlink")
		}
		if first, _, _ := strings.Cut(rel, "/"); strings.EqualFold(first, ".git") {
			return bad("resolves into git metadata through a symlink")
		}
	}
	return ""
}

// resolveExisting resolves the symlinks of the longest existing prefix of full (a path under
// top) and appends the rest, so that a link to outside is caught even when the path below it
// does not exist yet.
func resolveExisting(top, full string) (string, bool) {
	rest := ""
	for p := full; len(p) > len(top); p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest), true
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
	return "", false
}

// checkNoSymlink requires top/p to be a regular file reached through no symlink.
func checkNoSymlink(top, p string, bad func(string) string) string {
	cur := top
	parts := strings.Split(filepath.Clean(p), "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return bad("does not exist in the repository")
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return bad("goes through a symlink; provision scripts must be regular files")
		}
		if i == len(parts)-1 && !fi.Mode().IsRegular() {
			return bad("is not a regular file")
		}
	}
	return ""
}

// checkEgress checks the shape of one allow-list entry.
func checkEgress(v string) string {
	if _, err := netip.ParsePrefix(v); err == nil {
		return ""
	}
	if _, err := netip.ParseAddr(v); err == nil {
		return ""
	}
	if ap, err := netip.ParseAddrPort(v); err == nil {
		if ap.Port() == 0 {
			return "port 0"
		}
		return ""
	}
	host := v
	if h, port, ok := strings.Cut(v, ":"); ok {
		if !portOK(port) {
			return "want host:port with a port from 1 to 65535"
		}
		host = h
	}
	host = strings.TrimPrefix(host, "*.")
	return checkHost(host)
}

// checkHost checks a lower-case DNS name of at least two labels and no IP look-alike.
func checkHost(h string) string {
	if len(h) > 253 || !strings.Contains(h, ".") {
		return "want a lower-case DNS name with a dot, *.suffix, an IP or a CIDR"
	}
	for _, l := range strings.Split(h, ".") {
		if !labelRE.MatchString(l) {
			return fmt.Sprintf("invalid DNS label %q (lower-case letters, digits, hyphens)", l)
		}
	}
	return ""
}

// checkGitHost checks a git_tokens key: a DNS name, with an optional :port for a server on
// another port (git then names the host as host:port in the credential protocol, which is
// what the guest's helper matches), or "localhost" (with an optional :port): in broker mode a
// git route to a server on the host's loopback, which the broker reaches only with an egress
// address entry for it (its address check, broker/api.go decideUpstream), as for an API route.
func checkGitHost(h string) string {
	if name, port, ok := strings.Cut(h, ":"); ok {
		if !portOK(port) {
			return fmt.Sprintf("invalid port %q", port)
		}
		h = name
	}
	if strings.HasPrefix(h, "*") {
		return "want a host name, not a wildcard"
	}
	if h == "localhost" {
		return ""
	}
	return checkHost(h)
}

// portOK reports whether s is a port from 1 to 65535 written plainly.
func portOK(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == s
}

// checkItemSet checks the entries of one array together: mounts may not share or nest guest
// paths, ports may not share a host port (mounts.go).
func checkItemSet(key string, v []string) string {
	var err error
	switch key {
	case "mounts":
		_, err = ParseMounts(v)
	case "ports":
		_, err = ParsePorts(v)
	}
	if err != nil {
		return "has a conflict: " + strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return ""
}
