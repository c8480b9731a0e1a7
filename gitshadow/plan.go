package gitshadow

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Kind says how the guest shadows one path.
type Kind string

// The shadow kinds. Every kind is applied with bind mounts in the guest's mount namespace, which
// a non-root box user cannot undo, and every path is also snapshotted on the host.
const (
	// Pin bind-mounts a directory onto itself: a mount point cannot be renamed or removed
	// (EBUSY), so the git dir cannot be moved away and re-created.
	Pin Kind = "pin"
	// Copy replaces a file with a read-only guest-local copy: git in the box reads the config it
	// had at boot, and writes fail instead of reaching the host's file.
	Copy Kind = "copy"
	// Empty replaces a directory with an empty root-owned read-only directory (hooks/).
	Empty Kind = "empty"
	// ReadOnly bind-mounts a file or directory read-only onto itself.
	ReadOnly Kind = "readonly"
	// Watched is not shadowed in the guest (the path does not exist, so there is nothing to
	// mount over); the host snapshot records its absence and quarantines it if it appears.
	Watched Kind = "watched"
	// Symlink is not shadowed in the guest either (a bind mount would follow it): a symlink on
	// the way to a path the host's config names. The host snapshot restores it if the box points
	// it elsewhere.
	Symlink Kind = "symlink"
)

// Role says why a git dir is in the plan.
type Role string

// The roles of git dirs.
const (
	RoleTopLevel  Role = "toplevel"  // the git dir of the checkout the box mounts
	RoleCommon    Role = "common"    // the common dir of a linked worktree
	RoleWorktree  Role = "worktree"  // another linked worktree's admin dir (.git/worktrees/NAME)
	RoleSubmodule Role = "submodule" // a submodule's git dir, absorbed or not, at any depth
)

// Shadow is one path the guest shadows and the host snapshots.
type Shadow struct {
	// Path is absolute.
	Path string `json:"path"`
	// Kind is how the guest shadows it.
	Kind Kind `json:"kind"`
	// Dir is true for directories (pins, hooks, info, core.hooksPath targets).
	Dir bool `json:"dir"`
	// Exists is whether the path existed at discovery; a missing path is Watched.
	Exists bool `json:"exists"`
}

// GitDir is one git directory the host executes from, with what is shadowed in it.
type GitDir struct {
	Path     string   `json:"path"`
	Role     Role     `json:"role"`
	WorkTree string   `json:"workTree,omitempty"`
	Shadows  []Shadow `json:"shadows"`
}

// Plan is everything the guest must shadow and the host must snapshot for one checkout.
type Plan struct {
	// TopLevel is the real path of the checkout's work tree.
	TopLevel string `json:"topLevel"`
	// GitDirs lists every git dir the host executes from, parents before children.
	GitDirs []GitDir `json:"gitDirs"`
	// Extra holds shadows that belong to no git dir: .git files of submodule work trees and
	// the paths the host's config names (configrefs.go) with the directories and symlinks on
	// the way to them.
	Extra []Shadow `json:"extra"`
	// HostExecutedPaths are the absolute paths the host's git executes from or reads config
	// from: every git dir, every .git file, and every path in ConfigRefs.
	HostExecutedPaths []string `json:"hostExecutedPaths"`
	// ConfigRefs are the paths in the box's reach that the host's effective git config names
	// (core.fsmonitor, core.hooksPath, include.path, filter drivers, ! aliases...), each with
	// the key and the file:line that named it. DiffPaths gives them to package diff.
	ConfigRefs []ConfigRef `json:"configRefs"`
	// OutsideTopLevel lists git dirs outside the top level (a linked worktree's common dir):
	// the box must mount them too for git to work, and they are shadowed like the rest.
	OutsideTopLevel []string `json:"outsideTopLevel"`
	// Warnings are things discovery skipped, each naming the file and value.
	Warnings []string `json:"warnings"`
}

// AllShadows returns every shadow of the plan, sorted so that a directory comes before anything
// inside it (the order the guest must mount them in).
func (p *Plan) AllShadows() []Shadow {
	n := len(p.Extra)
	for _, g := range p.GitDirs {
		n += len(g.Shadows)
	}
	type keyed struct { // the sort keys, counted once rather than at each comparison
		depth int
		pin   bool
		s     Shadow
	}
	ks := make([]keyed, 0, n)
	add := func(s Shadow) { ks = append(ks, keyed{strings.Count(s.Path, "/"), s.Kind == Pin, s}) }
	for _, g := range p.GitDirs {
		for _, s := range g.Shadows {
			add(s)
		}
	}
	for _, s := range p.Extra {
		add(s)
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		if a.pin != b.pin {
			if a.pin {
				return -1
			}
			return 1
		}
		return strings.Compare(a.s.Path, b.s.Path)
	})
	all := make([]Shadow, len(ks))
	for i, k := range ks {
		all[i] = k.s
	}
	return all
}

// inside reports whether path is dir or below it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// builder accumulates a plan without duplicates.
type builder struct {
	plan    *Plan
	seenDir map[string]bool
	seen    map[string]bool
	hostExe map[string]bool
	// raw and bareNames are the paths and PATH lookups the host's config names, resolved by
	// resolveRefs once every git dir (the box's reach) is known.
	raw       []rawRef
	bareNames []bareName
	// listed are the config files git config --list read values from.
	listed  []string
	refSeen map[string]bool
	// readFiles are the config files read as data; lines caches their key lines.
	readFiles map[string]bool
	lines     map[string]map[string][]int
	// configs are the config files parsed so far; listings the entries of git dirs not yet
	// processed by children (nil where a git dir could not be listed).
	configs  map[string]parsedConfig
	listings map[string]listing
	// hasHEAD are the dirs a listing showed holding a regular HEAD (isGitDir without an lstat).
	hasHEAD map[string]bool
}

func newBuilder(top string) *builder {
	return &builder{
		plan: &Plan{TopLevel: top, Extra: []Shadow{}, HostExecutedPaths: []string{}, ConfigRefs: []ConfigRef{},
			OutsideTopLevel: []string{}, Warnings: []string{}},
		seenDir: map[string]bool{}, seen: map[string]bool{}, hostExe: map[string]bool{}, refSeen: map[string]bool{},
		readFiles: map[string]bool{}, lines: map[string]map[string][]int{},
		configs: map[string]parsedConfig{}, listings: map[string]listing{}, hasHEAD: map[string]bool{},
	}
}

// shadow makes a Shadow for path, looking at what is there now.
func shadow(path string, kind Kind, dir bool) Shadow {
	exists := false
	if fi, err := lstat(path); err == nil && fi.IsDir() == dir && fi.Mode().Type()&^dirMode == 0 {
		exists = true
	}
	if !exists {
		kind = Watched
	}
	return Shadow{Path: path, Kind: kind, Dir: dir, Exists: exists}
}

// extra adds a shadow that belongs to no git dir, once.
func (b *builder) extra(s Shadow) {
	if b.seen[s.Path] {
		return
	}
	b.seen[s.Path] = true
	b.plan.Extra = append(b.plan.Extra, s)
}

// hostExecuted records a path the host executes from.
func (b *builder) hostExecuted(path string) {
	if !b.hostExe[path] {
		b.hostExe[path] = true
		b.plan.HostExecutedPaths = append(b.plan.HostExecutedPaths, path)
	}
}

func (b *builder) warnf(format string, args ...any) {
	b.plan.Warnings = append(b.plan.Warnings, sprintf(format, args...))
}

// finish sorts the lists that have no meaningful order.
func (b *builder) finish() *Plan {
	sort.Strings(b.plan.HostExecutedPaths)
	for _, g := range b.plan.GitDirs {
		if !inside(g.Path, b.plan.TopLevel) {
			b.plan.OutsideTopLevel = append(b.plan.OutsideTopLevel, g.Path)
		}
	}
	return b.plan
}
