package gitshadow

import (
	"bytes"
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
	dir = filepath.Clean(dir)
	if b.seenDir[dir] {
		return
	}
	b.seenDir[dir] = true
	b.hostExecuted(dir)
	g := GitDir{Path: dir, Role: role, WorkTree: workTree}
	g.Shadows = []Shadow{
		shadow(dir, Pin, true),
		shadow(filepath.Join(dir, "config"), Copy, false),
		shadow(filepath.Join(dir, "config.worktree"), Copy, false),
		shadow(filepath.Join(dir, "hooks"), Empty, true),
		shadow(filepath.Join(dir, "commondir"), ReadOnly, false),
		shadow(filepath.Join(dir, "info"), ReadOnly, true),
	}
	if role == RoleWorktree {
		g.Shadows = append(g.Shadows, shadow(filepath.Join(dir, "gitdir"), ReadOnly, false))
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
	b.walkModules(filepath.Join(g.Path, "modules"))
	wts, _ := os.ReadDir(filepath.Join(g.Path, "worktrees"))
	for _, e := range wts {
		if e.IsDir() {
			b.gitDir(filepath.Join(g.Path, "worktrees", e.Name()), RoleWorktree, "")
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
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if isGitDir(sub) {
			b.gitDir(sub, RoleSubmodule, moduleWorkTree(sub))
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
func moduleWorkTree(gitDir string) string {
	cfg, err := readConfig(filepath.Join(gitDir, "config"))
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

// readConfig parses a git config file with go-git, as data: includes are not followed.
func readConfig(path string) (*format.Config, error) {
	data, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	cfg := format.New()
	if err := format.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return nil, fmt.Errorf("parse git config %s: %w", path, err)
	}
	return cfg, nil
}

// readSmall reads a regular file of at most maxConfigSize bytes, refusing anything else.
func readSmall(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	if fi.Size() > maxConfigSize {
		return nil, fmt.Errorf("read %s: %d bytes, more than %d", path, fi.Size(), maxConfigSize)
	}
	return os.ReadFile(path)
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
	for _, name := range slices.Sorted(maps.Keys(mods.Submodules)) { // a map: sorted, so the plan is the same every run
		m := mods.Submodules[name]
		if err := m.Validate(); err != nil || !safeRelPath(m.Path) {
			b.warnf("%s: submodule %q: path %q skipped: not a plain relative path", path, name, m.Path)
			continue
		}
		sub := filepath.Join(workTree, m.Path)
		b.submoduleWorkTree(sub)
	}
}

// submoduleWorkTree adds the git dir behind sub/.git.
func (b *builder) submoduleWorkTree(sub string) {
	dotgit := filepath.Join(sub, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return
	case fi.IsDir():
		b.gitDir(dotgit, RoleSubmodule, sub)
	case fi.Mode().IsRegular():
		b.dotGit(dotgit)
		if target, err := readGitFile(dotgit); err == nil {
			b.gitDir(target, RoleSubmodule, sub)
		} else {
			b.warnf("%v", err)
		}
	}
}

// readGitFile resolves a .git file ("gitdir: PATH") to an absolute git dir.
func readGitFile(path string) (string, error) {
	data, err := readSmall(path)
	if err != nil {
		return "", err
	}
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
