package policy

// This file narrows a sandbox manifest by the repository's [sandbox] table; its rules are at
// the top of sandbox.go.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SandboxGrant is what a trusted manifest grants, as NarrowSandbox compares it: paths absolute
// and clean, sizes in bytes, a zero limit meaning none.
type SandboxGrant struct {
	Read, Write, Exec, Network, Env []string
	Timeout, CPU                    time.Duration
	Memory, Output, Scratch         int64
	Pids                            int
}

// NarrowSandbox returns g narrowed by the repository's [sandbox] table (home expands "~/"), or a
// *Violations naming, with file:line, every entry of the table that would grant more than g.
func (e *Effective) NarrowSandbox(g SandboxGrant, home string) (SandboxGrant, error) {
	n := &narrower{eff: e, home: home}
	t := e.Config.Sandbox
	out := g
	out.Write = n.paths("sandbox.fs.write", t.Write, g.Write, g.Write)
	out.Read = n.paths("sandbox.fs.read", t.Read, g.Read, slices.Concat(g.Read, g.Write))
	out.Exec = n.paths("sandbox.exec.allow", t.Exec, g.Exec, g.Exec)
	out.Network = n.names("sandbox.network.allow", t.Network, g.Network)
	out.Env = n.names("sandbox.env.pass", t.Env, g.Env)
	out.Timeout = time.Duration(n.limit("sandbox.limits.timeout", int64(t.Timeout), int64(g.Timeout), t.Timeout.String()))
	out.CPU = time.Duration(n.limit("sandbox.limits.cpu", int64(t.CPU), int64(g.CPU), t.CPU.String()))
	out.Memory = n.limit("sandbox.limits.memory", sizeBytes(t.Memory), g.Memory, t.Memory)
	out.Output = n.limit("sandbox.limits.output", sizeBytes(t.Output), g.Output, t.Output)
	out.Scratch = n.limit("sandbox.limits.scratch", sizeBytes(t.Scratch), g.Scratch, t.Scratch)
	out.Pids = int(n.limit("sandbox.limits.pids", int64(t.Pids), int64(g.Pids), fmt.Sprint(t.Pids)))
	n.vs.sort()
	if err := n.vs.err(); err != nil {
		return g, err
	}
	return out, nil
}

// narrower carries one NarrowSandbox.
type narrower struct {
	eff  *Effective
	home string
	vs   Violations
}

// set reports whether the repository set key, and where.
func (n *narrower) set(key string) (Origin, bool) {
	o, ok := n.eff.Origins[key]
	return o, ok && o.Layer == LayerRepository
}

func (n *narrower) refuse(key string, o Origin, problem string) {
	n.vs.add(Violation{File: o.File, Line: o.Line, Key: key, Class: ProjectMayNarrow.String(),
		Problem: problem, Why: sandboxWhy, Belongs: "the manifest given with --manifest"})
}

// paths narrows a path grant: every entry of want must lie at or under one of within, as
// written and, where it exists, with symlinks resolved.
func (n *narrower) paths(key string, want, base, within []string) []string {
	o, ok := n.set(key)
	if !ok {
		return base
	}
	out := []string{}
	for i, w := range want {
		p := w
		if rest, ok := strings.CutPrefix(w, "~/"); ok {
			p = filepath.Join(n.home, rest)
		}
		p = filepath.Clean(p)
		if !covered(p, within) || !coveredResolved(p, within) {
			eo := n.eff.Origins[fmt.Sprintf("%s[%d]", key, i)]
			if eo.File == "" {
				eo = o
			}
			n.refuse(key, eo, fmt.Sprintf("would grant %q, which is not at or under a path the manifest grants (%s)", w, listText(within)))
			continue
		}
		out = append(out, p)
	}
	return out
}

// names narrows a list of exact names (destinations, variables).
func (n *narrower) names(key string, want, base []string) []string {
	if _, ok := n.set(key); !ok {
		return base
	}
	out := []string{}
	for i, w := range want {
		if !slices.Contains(base, w) {
			n.refuse(key, n.eff.Origins[fmt.Sprintf("%s[%d]", key, i)], fmt.Sprintf("would grant %q, which the manifest does not list (%s)", w, listText(base)))
			continue
		}
		out = append(out, w)
	}
	return out
}

// limit narrows a limit: the repository's value must be at most the manifest's, unless the
// manifest sets none.
func (n *narrower) limit(key string, want, base int64, written string) int64 {
	o, ok := n.set(key)
	if !ok {
		return base
	}
	if base > 0 && (want <= 0 || want > base) {
		n.refuse(key, o, fmt.Sprintf("would raise the limit to %s, above the manifest's or its default", written))
		return base
	}
	return want
}

// covered reports whether p is one of roots or lies under one, lexically.
func covered(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || r == "/" || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// coveredResolved reports whether p, with the symlinks of its longest existing prefix resolved,
// lies under one of roots resolved the same way.
func coveredResolved(p string, roots []string) bool {
	rr := make([]string, 0, len(roots))
	for _, r := range roots {
		rr = append(rr, resolvePrefix(r))
	}
	return covered(resolvePrefix(p), rr)
}

// resolvePrefix resolves the symlinks of the longest existing prefix of the clean absolute p.
func resolvePrefix(p string) string {
	rest := ""
	for {
		if x, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(x, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest, p = filepath.Join(filepath.Base(p), rest), parent
	}
}

// listText renders a grant for a message.
func listText(l []string) string {
	if len(l) == 0 {
		return "it grants none"
	}
	return "it grants " + strings.Join(l, ", ")
}

// SandboxFile returns the repository file whose [sandbox] table sets something, or "".
func (e *Effective) SandboxFile() string {
	for _, k := range sandboxKeys {
		if o, ok := e.Origins[k.Name]; ok && o.Layer == LayerRepository {
			return o.File
		}
	}
	return ""
}
