package policy

// This file holds what only the repository layer is subject to. Rules:
//   - a project-may-tighten value must rank at least as strict as the current value (set by the
//     defaults or the global file) in the key's order: network full < broker < offline,
//     agent_state shared < seeded < isolated, source mount < clone, git_identity host < corral <
//     none, profile standard < strict < locked, booleans false < true; restating is fine;
//   - env may add names but not change one a trusted layer set, and never a proxy or CORRAL_
//     variable;
//   - cpus, memory and disk may not exceed this host's CPUs, memory and free disk.

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// HostLimits caps the resources the repository may ask for.
type HostLimits struct {
	// CPUs is the host's CPU count.
	CPUs int
	// Memory is the host's memory in bytes.
	Memory int64
	// Disk is the free space in bytes where $CORRAL_HOME lives.
	Disk int64
}

// fallbackMemory is the memory cap when the host's memory cannot be measured.
const fallbackMemory = 4 << 30

// MeasureHost returns this host's limits; dir is where box disks will live.
func MeasureHost(dir string) HostLimits {
	h := HostLimits{CPUs: runtime.NumCPU(), Memory: fallbackMemory}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err == nil {
					h.Memory = kb << 10
				}
			}
		}
		f.Close()
	}
	for d := dir; d != ""; {
		var st syscall.Statfs_t
		if syscall.Statfs(d, &st) == nil {
			h.Disk = int64(uint64(st.Bavail) * uint64(st.Bsize))
			break
		}
		parent := parentDir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return h
}

// parentDir returns the parent of an absolute path ("/" for "/").
func parentDir(d string) string {
	i := strings.LastIndexByte(strings.TrimRight(d, "/"), '/')
	if i <= 0 {
		return "/"
	}
	return d[:i]
}

// proxyVars are variables the repository may not set: they redirect the box's traffic, which
// the trusted layers and the broker decide.
var proxyVars = []string{"http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"}

// repoCheck returns the violation a repository setting makes against the current values, if
// any. File, line, key and belongs are filled in by the caller.
func (l *loader) repoCheck(s setting) (Violation, bool) {
	spec, c := s.spec, l.eff.Config
	v := Violation{Class: spec.Class.String(), Why: spec.Why}
	switch {
	case isSandboxKey(spec):
		// Narrowed against the manifest when a sandbox runs (NarrowSandbox), not here.
	case spec.Name == "git_push":
		// Narrowed against the trusted patterns once every layer is read (gitpush.go).
	case spec.Name == "egress_presets":
		// Narrowed against the trusted names: only the intersection applies (presets.go).
	case spec.Class == ProjectMayTighten && spec.Kind != KindStringMap:
		cur := get(c, spec)
		if spec.rank(s.value) < spec.rank(cur) {
			v.Problem = fmt.Sprintf("would loosen %s from %v (%s) to %v; the repository may only tighten it",
				spec.Name, quoteIfString(cur), l.eff.Origins[spec.Name], quoteIfString(s.value))
			return v, true
		}
	case spec.Name == "env":
		name := s.mapKey
		if containsFold(proxyVars, name) || strings.HasPrefix(strings.ToUpper(name), "CORRAL_") {
			v.Problem = fmt.Sprintf("sets %s, which only a trusted layer may set", name)
			return v, true
		}
		if old, ok := c.Env[name]; ok && old != s.value.(string) {
			v.Problem = fmt.Sprintf("would replace %s, set by %s", name, l.eff.Origins["env."+name])
			return v, true
		}
	case spec.Name == "cpus":
		if n := s.value.(int); n > l.host.CPUs {
			v.Problem = fmt.Sprintf("asks for %d CPUs; this host has %d", n, l.host.CPUs)
			v.Why = "the repository may not take more of the host than it has"
			return v, true
		}
	case spec.Name == "memory" || spec.Name == "disk":
		limit := l.host.Memory
		if spec.Name == "disk" {
			limit = l.host.Disk
		}
		if n := sizeBytes(s.value.(string)); n > limit {
			v.Problem = fmt.Sprintf("asks for %s; this host can give at most %s", s.value, formatSize(limit))
			v.Why = "the repository may not take more of the host than it has"
			return v, true
		}
	}
	return Violation{}, false
}

// quoteIfString quotes strings for messages and leaves booleans bare.
func quoteIfString(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// containsFold reports whether list holds name, ignoring case.
func containsFold(list []string, name string) bool {
	for _, x := range list {
		if strings.EqualFold(x, name) {
			return true
		}
	}
	return false
}

// sizeBytes converts a size checked by sizeRE to bytes.
func sizeBytes(s string) int64 {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	shift := map[string]uint{"KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[m[2]]
	return n << shift
}

// formatSize renders bytes in the largest whole binary unit.
func formatSize(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
