package gitshadow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// maxIncludeDepth bounds chained includes followed as data, as git bounds its own (10).
const maxIncludeDepth = 10

// hostConfig reads what the host's effective config (every scope, includes resolved by git)
// names: each value of a key in namingKeys, and every config file git read. Then every file
// it listed is read again as data, so that an includeIf whose condition does not hold now,
// and what it includes in turn, are followed too. Relative paths in commands resolve against
// the top level, where git runs them.
func (b *builder) hostConfig(entries []configEntry, top string) {
	nth := map[string]int{}
	for _, e := range entries {
		file, ok := strings.CutPrefix(e.Origin, "file:")
		if !ok {
			b.named(e.Key, e.Value, strings.TrimSuffix(e.Origin, ":"), "", top, 0) // command line
			continue
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(top, file)
		}
		file = filepath.Clean(file)
		if !slices.Contains(b.listed, file) {
			b.listed = append(b.listed, file)
		}
		if keyKind(e.Key) == 0 {
			continue // names nothing: no need to find its line
		}
		k := file + "\x00" + e.Key
		origin := b.origin(file, e.Key, nth[k])
		nth[k]++
		b.named(e.Key, e.Value, origin, file, top, 0)
	}
	for _, f := range b.listed {
		b.dataConfig(f, top, 0)
	}
}

// configPointers reads g's own config and config.worktree as data, whatever the condition of
// an includeIf, for what they name; relative paths resolve against g's work tree.
func (b *builder) configPointers(g GitDir) {
	base := g.WorkTree
	if base == "" {
		base = g.Path
	}
	l := b.listings[g.Path]
	for _, name := range []string{"config", "config.worktree"} {
		if l.mayHave(name) {
			b.readConfig(filepath.Join(g.Path, name), l.has(name, false)) // dataConfig finds it read
			b.dataConfig(filepath.Join(g.Path, name), base, 0)
		}
	}
}

// dataConfig reads one config file as data (go-git's parser; nothing is run and includes are
// followed here, not by the parser) and records what each of its values names.
func (b *builder) dataConfig(file, base string, depth int) {
	if b.readFiles[file] {
		return
	}
	b.readFiles[file] = true
	cfg, err := b.readConfig(file, false)
	if err != nil {
		if !os.IsNotExist(err) {
			b.warnf("%v", err)
		}
		return
	}
	nth := map[string]int{}
	visit := func(prefix string, opts format.Options) {
		for _, o := range opts {
			key := prefix + "." + strings.ToLower(o.Key)
			if keyKind(key) == 0 {
				continue // names nothing: no need to find its line
			}
			origin := b.origin(file, key, nth[key])
			nth[key]++
			b.named(key, o.Value, origin, file, base, depth)
		}
	}
	for _, s := range cfg.Sections {
		visit(strings.ToLower(s.Name), s.Options)
		for _, ss := range s.Subsections {
			visit(strings.ToLower(s.Name)+"."+ss.Name, ss.Options)
		}
	}
}

// origin names where the nth value of key in file was set: the file (~/ for HOME, relative
// for the work tree) and, when it can be found, the line.
func (b *builder) origin(file, key string, nth int) string {
	lines, ok := b.lines[file]
	if !ok {
		if c, ok := b.configs[file]; ok && c.err == nil {
			lines = keyLines(string(c.data))
		} else if data, err := readSmall(file); err == nil {
			lines = keyLines(string(data))
		}
		b.lines[file] = lines
	}
	name := b.display(file)
	if l := lines[key]; nth < len(l) {
		return fmt.Sprintf("%s:%d", name, l[nth])
	}
	return name
}

// display shortens a path for a report: relative inside the top level, ~/ inside HOME.
func (b *builder) display(p string) string {
	if inside(p, b.plan.TopLevel) {
		if rel, err := filepath.Rel(b.plan.TopLevel, p); err == nil {
			return rel
		}
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" && inside(p, home) {
		rel, _ := filepath.Rel(home, p)
		return filepath.Join("~", rel)
	}
	return p
}

// named records what one value of key names. file is the config file it was read from ("" for
// the command line), base the directory relative program paths resolve against.
func (b *builder) named(key, value, origin, file, base string, depth int) {
	ref := rawRef{key: key, origin: origin, use: useRuns}
	switch keyKind(key) {
	case vBoolShell:
		if !isGitBool(value) {
			b.command(ref, value, base)
		}
	case vShell:
		b.command(ref, value, base)
	case vSubmoduleUpdate:
		if cmd, ok := strings.CutPrefix(value, "!"); ok {
			b.command(ref, cmd, base)
		}
	case vAlias:
		if cmd, ok := strings.CutPrefix(value, "!"); ok {
			b.command(ref, cmd, base)
		} else if f := strings.Fields(value); len(f) > 0 {
			b.bare(ref, "git-"+f[0], base)
		}
	case vHelper:
		b.helper(ref, value, base)
	case vProgram, vProgramPath:
		if strings.Contains(value, "/") || strings.HasPrefix(value, "~") {
			b.word(ref, value, base)
		} else if keyKind(key) == vProgram && value != "" {
			b.bare(ref, value, base)
		}
	case vRemoteHelper:
		if value != "" && !strings.ContainsAny(value, "/ ") {
			b.bare(ref, "git-remote-"+value, base)
		}
	case vFile:
		ref.use = useReads
		b.word(ref, value, base)
	case vDir:
		ref.use, ref.dir = useRunsFrom, true
		b.word(ref, value, base)
	case vInclude:
		b.include(ref, value, file, base, depth)
	}
}

// include records an included config file (relative to the including file) and follows it
// as data.
func (b *builder) include(ref rawRef, value, file, base string, depth int) {
	if file == "" && !filepath.IsAbs(value) && !strings.HasPrefix(value, "~") {
		return // git refuses a relative include from the command line
	}
	p := resolveWord(value, filepath.Dir(file))
	if p == "" {
		return
	}
	ref.use, ref.path = useConfig, p
	b.want(ref)
	if depth >= maxIncludeDepth {
		b.warnf("%s: includes nested deeper than %d levels not followed", ref.origin, maxIncludeDepth)
		return
	}
	if r, err := resolvePath(p); err == nil && r.exists {
		b.dataConfig(r.final, base, depth+1)
	}
}

// helper records what a credential helper names: "!cmd" and absolute commands run as they are,
// anything else as "git credential-NAME ...".
func (b *builder) helper(ref rawRef, value, base string) {
	switch {
	case value == "":
	case strings.HasPrefix(value, "!"):
		b.command(ref, value[1:], base)
	case filepath.IsAbs(value) || strings.HasPrefix(value, "~"):
		b.command(ref, value, base)
	default:
		b.command(ref, "git credential-"+value, base)
	}
}

// command records what a shell command names.
func (b *builder) command(ref rawRef, cmd, base string) {
	refs := parseCommand(cmd)
	for _, w := range refs.paths {
		b.word(ref, w, base)
	}
	for _, name := range refs.bare {
		b.bare(ref, name, base)
	}
}

// word records a path word, resolved against base.
func (b *builder) word(ref rawRef, w, base string) {
	if ref.path = resolveWord(w, base); ref.path != "" {
		b.want(ref)
	}
}

// bare records where a PATH lookup of name could land in the box's reach.
func (b *builder) bare(ref rawRef, name, base string) {
	b.bareNames = append(b.bareNames, bareName{ref: ref, name: name, base: base})
}
