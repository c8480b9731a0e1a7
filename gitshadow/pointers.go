package gitshadow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	format "github.com/go-git/go-git/v5/plumbing/format/config"

	"github.com/git-corral/git-corral/internal/gitcli"
)

// configEntry is one value of git config --list: scope, origin, key and value.
type configEntry struct {
	Scope, Origin, Key, Value string
}

// configListArgs asks git for every value with scope and origin, NUL-separated. Listing config
// executes nothing from the repository.
func configListArgs() []string {
	return []string{"config", "--list", "--show-origin", "--show-scope", "-z"}
}

// configList runs configListArgs in dir.
func configList(ctx context.Context, dir string) ([]configEntry, error) {
	out, err := gitcli.Git{Dir: dir}.Output(ctx, configListArgs()...)
	if err != nil {
		return nil, err
	}
	return parseConfigList(string(out))
}

// parseConfigList reads records of scope NUL origin NUL key LF value NUL.
func parseConfigList(out string) ([]configEntry, error) {
	fields := strings.Split(out, "\x00")
	if len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	if len(fields)%3 != 0 {
		return nil, fmt.Errorf("parse git config --list output: %d fields, not a multiple of 3", len(fields))
	}
	entries := make([]configEntry, 0, len(fields)/3)
	for i := 0; i < len(fields); i += 3 {
		key, value, _ := strings.Cut(fields[i+2], "\n")
		entries = append(entries, configEntry{Scope: fields[i], Origin: fields[i+1], Key: key, Value: value})
	}
	return entries, nil
}

// hostConfig adds what the host's effective config (every scope, includes resolved by git)
// points at inside the top level: the effective core.hooksPath and every included file.
func (b *builder) hostConfig(entries []configEntry, top string) {
	hooksPath := ""
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Origin, "file:"); ok {
			if !filepath.IsAbs(rest) {
				rest = filepath.Join(top, rest)
			}
			b.pointer(filepath.Clean(rest), false)
		}
		if strings.EqualFold(e.Key, "core.hookspath") {
			hooksPath = e.Value
		}
	}
	if hooksPath != "" {
		b.pointer(resolveHooksPath(hooksPath, top), true)
	}
}

// configPointers adds what g's own config and config.worktree point at, read as data and
// whatever the condition of an includeIf: core.hooksPath, include.path, includeIf.*.path.
func (b *builder) configPointers(g GitDir) {
	for _, name := range []string{"config", "config.worktree"} {
		file := filepath.Join(g.Path, name)
		cfg, err := readConfig(file)
		if err != nil {
			if !os.IsNotExist(err) {
				b.warnf("%v", err)
			}
			continue
		}
		base := g.WorkTree
		if base == "" {
			base = g.Path
		}
		for _, hp := range cfg.Section("core").Options.GetAll("hooksPath") {
			b.pointer(resolveHooksPath(hp, base), true)
		}
		for _, inc := range includePaths(cfg) {
			b.pointer(resolveInclude(inc, filepath.Dir(file)), false)
		}
	}
}

// includePaths returns the values of include.path and includeIf.<cond>.path.
func includePaths(cfg *format.Config) []string {
	var paths []string
	for _, s := range cfg.Sections {
		switch {
		case s.IsName("include"):
			paths = append(paths, s.Options.GetAll("path")...)
			for _, ss := range s.Subsections {
				paths = append(paths, ss.Options.GetAll("path")...)
			}
		case s.IsName("includeIf"):
			for _, ss := range s.Subsections {
				paths = append(paths, ss.Options.GetAll("path")...)
			}
		}
	}
	return paths
}

// resolveHooksPath resolves core.hooksPath the way git does: ~/ against HOME, relative paths
// against the directory hooks run in (the work tree, or the git dir when bare).
func resolveHooksPath(p, base string) string {
	if home, ok := strings.CutPrefix(p, "~/"); ok {
		h, _ := os.UserHomeDir()
		return filepath.Join(h, home)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// resolveInclude resolves an include path the way git does: ~/ against HOME, relative paths
// against the directory of the including file.
func resolveInclude(p, dir string) string {
	return resolveHooksPath(p, dir)
}

// pointer records a path the host's config points at. Only paths inside the top level matter
// here: the box cannot write anywhere else. Paths inside a git dir are already covered.
func (b *builder) pointer(path string, dir bool) {
	if !inside(path, b.plan.TopLevel) || b.seen[path] {
		return
	}
	for d := range b.seenDir {
		if path == filepath.Join(d, "config") || path == filepath.Join(d, "config.worktree") {
			return
		}
	}
	b.hostExecuted(path)
	b.extra(shadow(path, ReadOnly, dir))
}
