package project

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/git-corral/git-corral/internal/gitcli"
)

// ConfigFile is a git configuration file that applies to the repository.
type ConfigFile struct {
	// Scope is git's name for the layer: system, global, local, worktree, command.
	Scope string `json:"scope"`
	// Path is the absolute path of the file, or git's origin text when it is not a file
	// (command line, blob, standard input).
	Path string `json:"path"`
}

// configListArgs asks git for every value with its scope and origin, NUL-separated.
func configListArgs() []string {
	return []string{"config", "--list", "--show-origin", "--show-scope", "-z"}
}

// ConfigFiles returns every git configuration file that applies to the project, in the order git
// reads them, each once. Included files appear because git reports their values' origin.
func (p *Project) ConfigFiles(ctx context.Context) ([]ConfigFile, error) {
	out, err := gitcli.Git{Dir: p.TopLevel}.Output(ctx, configListArgs()...)
	if err != nil {
		return nil, err
	}
	return parseConfigOrigins(string(out), p.TopLevel)
}

// parseConfigOrigins reads the output of configListArgs: records of scope NUL origin NUL
// key LF value NUL. Relative file origins are relative to dir.
func parseConfigOrigins(out, dir string) ([]ConfigFile, error) {
	fields := strings.Split(out, "\x00")
	if len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	if len(fields)%3 != 0 {
		return nil, fmt.Errorf("parse git config --list output: %d fields, not a multiple of 3", len(fields))
	}
	var files []ConfigFile
	seen := map[ConfigFile]bool{}
	for i := 0; i < len(fields); i += 3 {
		scope, origin := fields[i], fields[i+1]
		cf := ConfigFile{Scope: scope, Path: origin}
		if rest, ok := strings.CutPrefix(origin, "file:"); ok {
			if !filepath.IsAbs(rest) {
				rest = filepath.Join(dir, rest)
			}
			cf.Path = filepath.Clean(rest)
		}
		if !seen[cf] {
			seen[cf] = true
			files = append(files, cf)
		}
	}
	return files, nil
}
