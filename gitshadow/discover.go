package gitshadow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/config"
	format "github.com/go-git/go-git/v5/plumbing/format/config"

	"github.com/git-corral/git-corral/project"
)

var (
	lstat   = os.Lstat
	sprintf = fmt.Sprintf
)

const dirMode = fs.ModeDir

// maxConfigSize bounds a git config or .gitmodules file discovery will read; git's own configs
// are tiny, and a huge one is hostile.
const maxConfigSize = 1 << 20

// Discover finds every git dir the host executes from for the checkout p and plans the shadow.
// It runs nothing from the repository: the top level's effective config comes from
// git config --list (which resolves includes the way the host will), everything else is read as
// data — modules by walking .git/modules/**, worktrees by .git/worktrees/*, .gitmodules parsed
// with go-git, never git submodule foreach.
func Discover(ctx context.Context, p *project.Project) (*Plan, error) {
	b := newBuilder(p.TopLevel)
	entries, err := configList(ctx, p.TopLevel)
	if err != nil {
		return nil, fmt.Errorf("discover git dirs of %s: %w", p.TopLevel, err)
	}
	b.dotGit(filepath.Join(p.TopLevel, ".git"))
	b.gitDir(p.GitDir, RoleTopLevel, p.TopLevel)
	if p.Linked() {
		b.linkedAdmin(p.GitDir)
		b.gitDir(p.CommonDir, RoleCommon, "")
	}
	b.hostConfig(entries, p.TopLevel)
	for i := 0; i < len(b.plan.GitDirs); i++ { // gitDir appends as it finds more
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		g := b.plan.GitDirs[i]
		b.configPointers(g)
		b.children(g)
	}
	b.resolveRefs()
	return b.finish(), nil
}

// gitDir adds a git dir with the shadows every git dir gets, once.
func (b *builder) gitDir(dir string, role Role, workTree string) {
	b.listedGitDir(filepath.Clean(dir), role, workTree, nil)
}

// listedGitDir is gitDir for a clean dir whose listing may already be known (nil: list it now).
// The listing, kept until children has used it, stands in for an lstat of each shadowed path.
func (b *builder) listedGitDir(dir string, role Role, workTree string, l listing) {
	if b.seenDir[dir] {
		return
	}
	b.seenDir[dir] = true
	b.hostExecuted(dir)
	if l == nil {
		l = listDir(dir)
	}
	b.listings[dir] = l
	g := GitDir{Path: dir, Role: role, WorkTree: workTree}
	pin := Shadow{Path: dir, Kind: Pin, Dir: true, Exists: true} // listDir opened it: a directory, no symlink
	if l == nil {
		pin = shadow(dir, Pin, true)
	}
	g.Shadows = []Shadow{
		pin,
		shadowIn(l, dir, "config", Copy, false),
		shadowIn(l, dir, "config.worktree", Copy, false),
		shadowIn(l, dir, "hooks", Empty, true),
		shadowIn(l, dir, "commondir", ReadOnly, false),
		shadowIn(l, dir, "info", ReadOnly, true),
	}
	if role == RoleWorktree {
		g.Shadows = append(g.Shadows, shadowIn(l, dir, "gitdir", ReadOnly, false))
	}
	for _, s := range g.Shadows {
		b.seen[s.Path] = true
	}
	b.plan.GitDirs = append(b.plan.GitDirs, g)
}

// linkedAdmin makes the gitdir file of the checkout's own admin dir (a linked worktree's
// <common>/worktrees/<name>) read-only, as every other worktree's is: the host's git worktree
// prune and repair read it.
func (b *builder) linkedAdmin(dir string) {
	s := shadow(filepath.Join(filepath.Clean(dir), "gitdir"), ReadOnly, false)
	if b.seen[s.Path] || len(b.plan.GitDirs) == 0 {
		return
	}
	b.seen[s.Path] = true
	g := &b.plan.GitDirs[len(b.plan.GitDirs)-1]
	g.Shadows = append(g.Shadows, s)
}

// dotGit adds the .git entry of a work tree: a directory is pinned with its git dir; a file
// (absorbed submodule, linked worktree) is made read-only so it cannot be pointed elsewhere.
func (b *builder) dotGit(path string) {
	fi, err := os.Lstat(path)
	if err != nil || fi.IsDir() {
		return
	}
	b.hostExecuted(path)
	b.extra(shadow(path, ReadOnly, false))
}

// children adds the git dirs below g: modules/** (absorbed submodules, at any depth), the admin
// dirs of linked worktrees, and non-absorbed submodules named in g's work tree's .gitmodules.
func (b *builder) children(g GitDir) {
	l := b.listings[g.Path]
	delete(b.listings, g.Path)
	if l.mayHave("modules") {
		b.walkModules(filepath.Join(g.Path, "modules"))
	}
	if l.mayHave("worktrees") {
		wts, _ := os.ReadDir(filepath.Join(g.Path, "worktrees"))
		for _, e := range wts {
			if e.IsDir() {
				b.gitDir(filepath.Join(g.Path, "worktrees", e.Name()), RoleWorktree, "")
			}
		}
	}
	if g.WorkTree != "" {
		b.gitmodules(g.WorkTree)
	}
}

// walkModules finds git dirs under a modules/ directory. A directory holding HEAD is a git dir
// (its own modules/ is walked when it is processed); any other directory is an intermediate
// level of a nested submodule name and is pinned so it cannot be renamed away.
func (b *builder) walkModules(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	b.extra(shadow(dir, Pin, true))
	ahead := readModuleDirs(dir, ents)
	for i, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		l := ahead[i].l
		if c := ahead[i].config; c != nil {
			b.configs[filepath.Join(sub, "config")] = *c
		}
		if l.has("HEAD", false) {
			b.hasHEAD[sub] = true
		}
		if l == nil && isGitDir(sub) || l.has("HEAD", false) {
			b.listedGitDir(sub, RoleSubmodule, b.moduleWorkTree(sub, l), l)
			continue
		}
		b.walkModules(sub)
	}
}

// isGitDir reports whether dir looks like a git dir: it holds a HEAD file.
func isGitDir(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, "HEAD"))
	return err == nil && fi.Mode().IsRegular()
}

// moduleWorkTree reads core.worktree from a submodule git dir's config, resolved against the git
// dir, or "" when it is not set or not readable.
func (b *builder) moduleWorkTree(gitDir string, l listing) string {
	if !l.mayHave("config") {
		return ""
	}
	cfg, err := b.readConfig(filepath.Join(gitDir, "config"), l.has("config", false))
	if err != nil {
		return ""
	}
	wt := cfg.Section("core").Option("worktree")
	if wt == "" {
		return ""
	}
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(gitDir, wt)
	}
	return filepath.Clean(wt)
}

// readConfig parses a git config file with go-git, as data (includes are not followed), once:
// moduleWorkTree and configPointers both read a submodule's config.
// regular says a listing showed it as a regular file, so there is no need to lstat it again.
func (b *builder) readConfig(path string, regular bool) (*format.Config, error) {
	if c, ok := b.configs[path]; ok {
		return c.cfg, c.err
	}
	read := readSmall
	if regular {
		read = readRegular
	}
	c := parseConfig(path, read)
	b.configs[path] = c
	return c.cfg, c.err
}

// parsedConfig is one config file as readConfig read it.
type parsedConfig struct {
	cfg  *format.Config
	data []byte
	err  error
}

// gitmodules reads workTree/.gitmodules as data and adds every submodule whose work tree holds
// a .git directory (not absorbed) or a .git file (absorbed, or pointing somewhere else).
func (b *builder) gitmodules(workTree string) {
	path := filepath.Join(workTree, ".gitmodules")
	data, err := readSmall(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			b.warnf("%s: %v", path, err)
		}
		return
	}
	mods := gitconfig.NewModules()
	if err := mods.Unmarshal(data); err != nil {
		b.warnf("%s: %v", path, err)
		return
	}
	names := slices.Sorted(maps.Keys(mods.Submodules)) // a map: sorted, so the plan is the same every run
	subs := make([]string, len(names))                 // "" for a path that is skipped
	for i, name := range names {
		if m := mods.Submodules[name]; m.Validate() == nil && safeRelPath(m.Path) {
			subs[i] = filepath.Join(workTree, m.Path)
		}
	}
	ahead := readDotGits(subs)
	for i, name := range names {
		if subs[i] == "" {
			b.warnf("%s: submodule %q: path %q skipped: not a plain relative path", path, name, mods.Submodules[name].Path)
			continue
		}
		b.submoduleWorkTree(subs[i], ahead[i])
	}
}

// submoduleWorkTree adds the git dir behind sub/.git, from what readDotGits found there.
func (b *builder) submoduleWorkTree(sub string, d dotGitFile) {
	dotgit := filepath.Join(sub, ".git")
	switch {
	case d.err != nil:
		return
	case d.fi.IsDir():
		b.gitDir(dotgit, RoleSubmodule, sub)
	case d.fi.Mode().IsRegular(): // what dotGit would lstat again
		b.hostExecuted(dotgit)
		b.extra(Shadow{Path: dotgit, Kind: ReadOnly, Exists: true})
		var target string
		err := d.rerr
		if err == nil {
			target, err = gitFileTarget(dotgit, d.data, b.isGitDir)
		}
		if err != nil {
			b.warnf("%v", err)
			return
		}
		b.gitDir(target, RoleSubmodule, sub)
	}
}

// isGitDir is isGitDir without an lstat for a git dir whose listing showed its HEAD.
func (b *builder) isGitDir(dir string) bool {
	return b.hasHEAD[filepath.Clean(dir)] || isGitDir(dir)
}

// readGitFile resolves a .git file ("gitdir: PATH") to an absolute git dir.
func readGitFile(path string) (string, error) {
	data, err := readSmall(path)
	if err != nil {
		return "", err
	}
	return gitFileTarget(path, data, isGitDir)
}

// gitFileTarget parses the content of the .git file at path: the git dir it names, which
// isGitDir must accept.
func gitFileTarget(path string, data []byte, isGitDir func(string) bool) (string, error) {
	line, _, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
	if !ok || target == "" {
		return "", fmt.Errorf("read %s: not a gitdir file", path)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(path), target)
	}
	if !isGitDir(target) {
		return "", fmt.Errorf("read %s: %q is not a git dir", path, target)
	}
	return filepath.Clean(target), nil
}

// safeRelPath reports whether p is a clean relative path with no .. and no .git component.
func safeRelPath(p string) bool {
	if p == "" || filepath.IsAbs(p) || strings.ContainsAny(p, "\x00\r\n") {
		return false
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}
