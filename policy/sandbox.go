package policy

// This file holds the repository's [sandbox] table: what it may do to the manifest of
// 'git corral sandbox'. Rules:
//   - the table has the manifest's keys (fs.read, fs.write, exec.allow, network.allow,
//     env.pass, limits.*), each a project-may-tighten key of the one key table, classified by
//     its path as written, part by part: a case or Unicode variant of "sandbox" or of a key in
//     it, a quoted key holding a dot ("fs.read" is one part, not two) and any other key are
//     refused, however the table is spelled (header, dotted key, inline table);
//   - only the repository's .corral.toml holds the table; the trusted grants of a sandbox are its
//     manifest (--manifest FILE), so a trusted file holding it is refused rather than guessed at;
//   - the table can only narrow (NarrowSandbox): a path must lie at or under a path the manifest
//     grants the same access (fs.read may also narrow fs.write), both as written and, where it
//     exists, after resolving symlinks; a destination or variable name must be one the manifest
//     lists, exactly; a limit must be at most the manifest's (no limit there: any value). A key
//     the table does not set leaves the manifest's grant as it is; one it sets replaces it.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// sandboxTable is the first key part of every [sandbox] key.
const sandboxTable = "sandbox"

// Sandbox is the repository's [sandbox] table, as written (paths are expanded only when
// narrowing; sizes stay strings such as "256MiB").
type Sandbox struct {
	Read, Write, Exec, Network, Env []string
	Timeout, CPU                    time.Duration
	Memory, Output, Scratch         string
	Pids                            int
}

const sandboxWhy = "the repository's [sandbox] may only narrow what the user's manifest grants; more would let a repository's script read, write, run or reach what the user did not allow"

// sandboxKeys are the [sandbox] keys of the key table (keys.go appends them).
var sandboxKeys = []KeySpec{
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.env.pass", Kind: KindStrings, Example: `["LANG"]`, Doc: "Narrows the manifest's env.pass (host variables passed into `git corral sandbox`) to these names; each must be one the manifest passes.",
		field: func(c *Config) any { return &c.Sandbox.Env }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.exec.allow", Kind: KindStrings, Example: `["/usr/bin/python3"]`, Doc: "Narrows the manifest's exec.allow to these programs; each must be at or under one the manifest allows.",
		field: func(c *Config) any { return &c.Sandbox.Exec }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.fs.read", Kind: KindStrings, Example: `["~/src/data"]`, Doc: "Narrows the manifest's fs.read to these paths (absolute or ~/); each must be at or under a path the manifest grants for reading or writing.",
		field: func(c *Config) any { return &c.Sandbox.Read }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.fs.write", Kind: KindStrings, Example: `["/tmp/out"]`, Doc: "Narrows the manifest's fs.write to these paths; each must be at or under a path the manifest grants for writing.",
		field: func(c *Config) any { return &c.Sandbox.Write }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.limits.cpu", Kind: KindDuration, Example: `"10s"`, Doc: "CPU time of each sandboxed process; at most the manifest's limits.cpu.",
		field: func(c *Config) any { return &c.Sandbox.CPU }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.limits.memory", Kind: KindString, Example: `"256MiB"`, Doc: "Address space of each sandboxed process (KiB, MiB, GiB, TiB); at most the manifest's limits.memory.",
		field: func(c *Config) any { return &c.Sandbox.Memory }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.limits.output", Kind: KindString, Example: `"1MiB"`, Doc: "Bytes of output copied from the sandboxed command; at most the manifest's limits.output.",
		field: func(c *Config) any { return &c.Sandbox.Output }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.limits.pids", Kind: KindInt, Example: "32", Doc: "Processes and threads of the sandbox; at most the manifest's limits.pids.",
		field: func(c *Config) any { return &c.Sandbox.Pids }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.limits.scratch", Kind: KindString, Example: `"64MiB"`, Doc: "Size of the sandbox's private /tmp; at most the manifest's limits.scratch.",
		field: func(c *Config) any { return &c.Sandbox.Scratch }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.limits.timeout", Kind: KindDuration, Example: `"30s"`, Doc: "Time limit of the sandboxed command; at most the manifest's limits.timeout.",
		field: func(c *Config) any { return &c.Sandbox.Timeout }},
	{Class: ProjectMayNarrow, Why: sandboxWhy, Name: "sandbox.network.allow", Kind: KindStrings, Example: `["pypi.org:443"]`, Doc: "Narrows the manifest's network.allow to these entries; each must be an entry the manifest lists, exactly.",
		field: func(c *Config) any { return &c.Sandbox.Network }},
}

// isSandboxKey reports whether spec is a key of the [sandbox] table.
func isSandboxKey(spec *KeySpec) bool { return strings.HasPrefix(spec.Name, sandboxTable+".") }

// classifySandbox classifies one entry under [sandbox] by its parts as written. It returns the
// setting (nil for a header or inline table that only opens the table or a group of it), or the
// class and problem of a refused entry.
func classifySandbox(e entry) (*setting, string, string) {
	if e.array {
		return nil, "invalid", "is an array of tables; [sandbox] and its parts are tables"
	}
	if len(e.path) < 3 && e.table && (len(e.path) == 1 || sandboxGroup(e.path[1]) != "") {
		return nil, "", ""
	}
	var spec *KeySpec
	for i := range keys {
		if slices.Equal(strings.Split(keys[i].Name, "."), e.path) {
			spec = &keys[i]
		}
	}
	if spec == nil {
		if known := sandboxFold(e.path); known != "" && !slices.Equal(strings.Split(known, "."), e.path) {
			return nil, "unknown", fmt.Sprintf("differs from the key %q only by case or Unicode folding", known)
		}
		return nil, "unknown", "is not a key of the [sandbox] table (fs.read, fs.write, exec.allow, network.allow, env.pass, limits.timeout, limits.cpu, limits.memory, limits.output, limits.pids, limits.scratch)"
	}
	e.path = []string{spec.Name}
	s, problem := shape(spec, e)
	return s, spec.Class.String(), problem
}

// sandboxGroup returns the group (fs, exec…) part spelled exactly, or "".
func sandboxGroup(part string) string {
	for _, k := range sandboxKeys {
		if g := strings.Split(k.Name, ".")[1]; g == part {
			return g
		}
	}
	return ""
}

// sandboxFold returns the [sandbox] key (or group) that path equals under case and Unicode
// simple folding, part by part, or "".
func sandboxFold(path []string) string {
	for _, k := range sandboxKeys {
		parts := strings.Split(k.Name, ".")
		n := min(len(parts), len(path))
		same := len(path) <= len(parts)
		for i := 0; i < n && same; i++ {
			same = strings.EqualFold(parts[i], path[i])
		}
		if same {
			return strings.Join(parts[:n], ".")
		}
	}
	return ""
}

// checkSandboxItem checks one element of a [sandbox] array key.
func checkSandboxItem(key, v string) string {
	switch key {
	case "sandbox.fs.read", "sandbox.fs.write", "sandbox.exec.allow":
		if !filepath.IsAbs(v) && !strings.HasPrefix(v, "~/") {
			return fmt.Sprintf("has the path %q, which must be absolute or start with \"~/\"", v)
		}
		if slices.Contains(strings.Split(v, "/"), "..") {
			return fmt.Sprintf("has the path %q, which contains \"..\": name the path itself", v)
		}
	case "sandbox.network.allow":
		if p := checkEgress(v); p != "" {
			return fmt.Sprintf("has an invalid entry %q: %s", v, p)
		}
	case "sandbox.env.pass":
		if !envNameRE.MatchString(v) {
			return fmt.Sprintf("has an invalid variable name %q", v)
		}
	}
	return ""
}

// checkSandboxValue checks a [sandbox] value on its own.
func checkSandboxValue(s setting) string {
	switch v := s.value.(type) {
	case string:
		if !sizeRE.MatchString(v) {
			return fmt.Sprintf("must be a size such as \"256MiB\" (KiB, MiB, GiB, TiB), not %q", v)
		}
	case int:
		if v < 1 {
			return fmt.Sprintf("must be at least 1, not %d", v)
		}
	case []string:
		for _, x := range v {
			if p := checkSandboxItem(s.spec.Name, x); p != "" {
				return p
			}
		}
	}
	return ""
}

// classifySandboxEntry classifies an entry whose first part is "sandbox", reporting through bad.
// It reports false when the entry was refused.
func classifySandboxEntry(e entry, li layerInfo, bad func(class, problem, why, belongs string)) (*setting, bool) {
	if li.layer != LayerRepository {
		bad("invalid", "is a [sandbox] table in a trusted file",
			"a sandbox's trusted grants are its manifest (git corral sandbox --manifest FILE); only the repository's .corral.toml holds [sandbox], to narrow it", "")
		return nil, false
	}
	s, class, problem := classifySandbox(e)
	if problem != "" {
		bad(class, problem, sandboxWhy, "")
		return nil, false
	}
	return s, true
}
