package gitshadow

// What the host's effective git config names inside the box's reach is host-executed: the host's
// next git status runs a core.fsmonitor script the box rewrote. The rules:
//   - The box's reach is the top level and every git dir of the plan (a linked worktree's common
//     dir is mounted too); a path elsewhere is the host's alone and needs nothing.
//   - Each named path is resolved as the kernel will when git opens it (resolve.go). Its final
//     path is shadowed read-only in the guest (a directory whole) and snapshotted on the host;
//     each real directory on the way inside the reach is pinned, so it cannot be renamed away and
//     replaced; each symlink on the way is snapshotted on the host only (a bind mount would
//     follow it), so the host restores it if the box points it elsewhere.
//   - A named path that does not exist is watched: the host removes it if it appears.
//   - A path already covered read-only (under hooks/, a copied config) gets no second mount.
//   - Every such path is in ConfigRefs with the key and the file:line that named it, for the
//     plan's JSON and for package diff (DiffPaths).

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// How the host's git uses a named path.
const (
	useRuns     = "runs"            // a program or script (or a file a command reads)
	useRunsFrom = "runs hooks from" // a directory of programs (core.hooksPath, init.templateDir)
	useReads    = "reads"           // a file git reads
	useConfig   = "reads as config" // an included config file
	useFollows  = "follows"         // a symlink on the way to a named path
)

// ConfigRef is one path in the box's reach that the host's effective git config names.
type ConfigRef struct {
	// Path is absolute: the real path git reaches, or a symlink on the way to it.
	Path string `json:"path"`
	// Key is the config key as git lists it ("core.fsmonitor", "include.path"), or "" for a
	// config file git listed values from.
	Key string `json:"key"`
	// Origin is where the value was set: a file (~/ for HOME, relative for the work tree) with
	// its line when known, or "command line".
	Origin string `json:"origin"`
	// Use is what the host's git does with it: "runs", "runs hooks from", "reads",
	// "reads as config" or "follows" (a symlink on the way).
	Use string `json:"use"`
}

// Reason says in one line why the host executes the path.
func (r ConfigRef) Reason() string {
	if r.Key == "" {
		return "a config file the host's git reads (" + r.Origin + ")"
	}
	what := "named by " + r.Key
	if r.Origin != "" {
		what += " in " + r.Origin
	}
	if r.Use == useFollows {
		return "a symlink on the way to a path " + what + ": the host's git follows it"
	}
	return what + ": the host's git " + r.Use + " it"
}

// rawRef is a path a config value names, before it is resolved.
type rawRef struct {
	path        string
	dir         bool
	key, origin string
	use         string
}

// bareName is a program name git looks up on PATH, resolved once the reach is known.
type bareName struct {
	ref        rawRef
	name, base string
}

// want queues a named path for resolveRefs, as written: resolvePath takes its ".." physically.
func (b *builder) want(r rawRef) {
	b.raw = append(b.raw, r)
}

// inReach reports whether the box can write p: it is in the top level or a git dir of the plan.
func (b *builder) inReach(p string) bool {
	if inside(p, b.plan.TopLevel) {
		return true
	}
	for d := range b.seenDir {
		if inside(p, d) {
			return true
		}
	}
	return false
}

// resolveRefs resolves every queued path and PATH lookup and adds their shadows and refs.
func (b *builder) resolveRefs() {
	pathEnv := os.Getenv("PATH")
	for _, n := range b.bareNames {
		for _, c := range pathCandidates(n.name, pathEnv, n.base, b.inReach) {
			r := n.ref
			r.path = c
			b.want(r)
		}
	}
	var cands []Shadow
	for _, r := range b.raw {
		cands = append(cands, b.resolveRef(r)...)
	}
	for _, f := range b.listed { // a config file no include names (GIT_CONFIG_GLOBAL, say)
		if res, err := resolvePath(f); err == nil && !b.hostExe[res.final] {
			cands = append(cands, b.resolveRef(rawRef{path: f, use: useConfig, origin: "git config --list --show-origin"})...)
		}
	}
	// One shadow per path: a directory that is both named (read-only) and on the way to
	// another named path (pinned) is made read-only, which pins it too.
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].Path != cands[j].Path {
			return cands[i].Path < cands[j].Path
		}
		return cands[i].Kind == ReadOnly && cands[j].Kind != ReadOnly
	})
	for _, s := range cands {
		if !b.seen[s.Path] && !b.covered(s.Path, cands) {
			b.extra(s)
		}
	}
	sort.SliceStable(b.plan.ConfigRefs, func(i, j int) bool { return b.plan.ConfigRefs[i].Path < b.plan.ConfigRefs[j].Path })
}

// resolveRef resolves one named path and returns the shadows it needs.
func (b *builder) resolveRef(r rawRef) []Shadow {
	res, err := resolvePath(r.path)
	if err != nil {
		b.warnf("%s in %s: %s: %v", r.key, r.origin, r.path, err)
		return nil
	}
	var out []Shadow
	for _, l := range res.links {
		if b.inReach(l) {
			b.ref(ConfigRef{Path: l, Key: r.key, Origin: r.origin, Use: useFollows})
			out = append(out, Shadow{Path: l, Kind: Symlink, Exists: true})
		}
	}
	if !b.inReach(res.final) || b.gitConfigFile(res.final) {
		return out
	}
	b.ref(ConfigRef{Path: res.final, Key: r.key, Origin: r.origin, Use: r.use})
	if !res.exists {
		return append(out, Shadow{Path: res.final, Kind: Watched, Dir: r.dir})
	}
	for _, d := range res.dirs {
		if b.inReach(d) && d != b.plan.TopLevel {
			out = append(out, shadow(d, Pin, true))
		}
	}
	fi, err := os.Stat(res.final)
	if err != nil {
		b.warnf("%s in %s: %v", r.key, r.origin, err)
		return out
	}
	if fi.Mode().IsRegular() || fi.IsDir() {
		out = append(out, shadow(res.final, ReadOnly, fi.IsDir()))
	} else {
		b.warnf("%s in %s: %s is not a regular file or directory; the host watches it only", r.key, r.origin, res.final)
		out = append(out, Shadow{Path: res.final, Kind: Watched, Exists: true})
	}
	return out
}

// gitConfigFile reports whether p is the config or config.worktree of a git dir of the plan:
// those have their own shadow (a read-only copy).
func (b *builder) gitConfigFile(p string) bool {
	base := filepath.Base(p)
	return (base == "config" || base == "config.worktree") && b.seenDir[filepath.Dir(p)]
}

// covered reports whether p lies strictly inside a path that is already read-only in the
// guest (a copied config, an empty hooks dir, a read-only file or directory), so a mount of its
// own is not needed, and could not be made once the outer mount hides p.
func (b *builder) covered(p string, cands []Shadow) bool {
	check := func(s Shadow) bool {
		return s.Path != p && (s.Kind == ReadOnly || s.Kind == Empty || s.Kind == Copy) && inside(p, s.Path)
	}
	for _, g := range b.plan.GitDirs { // not AllShadows: it sorts every shadow, once per call
		for _, s := range g.Shadows {
			if check(s) {
				return true
			}
		}
	}
	for _, s := range b.plan.Extra {
		if check(s) {
			return true
		}
	}
	for _, s := range cands {
		if check(s) {
			return true
		}
	}
	return false
}

// ref records a ConfigRef and its path as host-executed, once.
func (b *builder) ref(r ConfigRef) {
	k := r.Path + "\x00" + r.Key + "\x00" + r.Origin + "\x00" + r.Use
	if b.refSeen[k] {
		return
	}
	b.refSeen[k] = true
	b.plan.ConfigRefs = append(b.plan.ConfigRefs, r)
	b.hostExecuted(r.Path)
}

// DiffPath is a work-tree path the host's git config names, for package diff.
type DiffPath struct {
	// Path is slash-separated and relative to the top level.
	Path string
	// Reason says which key named it, where, and what git does with it.
	Reason string
}

// DiffPaths returns the work-tree paths of ConfigRefs, one per path, with every reason joined.
// Paths in git dirs are left out: package diff reviews git metadata on its own.
func (p *Plan) DiffPaths() []DiffPath {
	var out []DiffPath
	index := map[string]int{}
	for _, r := range p.ConfigRefs {
		rel, err := filepath.Rel(p.TopLevel, r.Path)
		if err != nil || !inside(r.Path, p.TopLevel) || rel == "." || p.inGitDir(r.Path) {
			continue
		}
		rel = filepath.ToSlash(rel)
		if i, ok := index[rel]; ok {
			if !strings.Contains(out[i].Reason, r.Reason()) {
				out[i].Reason += "; " + r.Reason()
			}
			continue
		}
		index[rel] = len(out)
		out = append(out, DiffPath{Path: rel, Reason: r.Reason()})
	}
	return out
}

// inGitDir reports whether path is inside one of the plan's git dirs.
func (p *Plan) inGitDir(path string) bool {
	for _, g := range p.GitDirs {
		if inside(path, g.Path) {
			return true
		}
	}
	return false
}
