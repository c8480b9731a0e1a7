package project

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/git-corral/git-corral/internal/gitcli"
)

// ErrNotRepository is returned when the directory is not inside a git work tree.
var ErrNotRepository = errors.New("not in a git repository")

// ErrBare is returned for a bare repository, which has no work tree to mount.
var ErrBare = errors.New("bare repository has no work tree")

// ExitNoRepo is git corral's exit code for a directory that is no checkout (git's own for "not
// a git repository").
const ExitNoRepo = 128

// Hint returns what to do about err when it is (or wraps) ErrNotRepository or ErrBare, and
// whether it is: git corral's front and its full binary answer both the same way.
func Hint(err error) (string, bool) {
	switch {
	case errors.Is(err, ErrNotRepository):
		return "run git corral inside a git checkout, or name one with 'git corral -C DIR …'", true
	case errors.Is(err, ErrBare):
		return "a bare repository has no work tree to mount; use 'git corral clone URL' for untrusted code", true
	}
	return "", false
}

// Project is a checkout as git reports it.
type Project struct {
	// TopLevel is the real path of the work tree's top level (git rev-parse --show-toplevel).
	TopLevel string
	// GitDir is the absolute git dir of this work tree (per-worktree for a linked worktree).
	GitDir string
	// CommonDir is the absolute common git dir (shared by all worktrees).
	CommonDir string
	// Box is the box name derived from TopLevel.
	Box string
}

// Linked reports whether the checkout is a linked worktree (its git dir is not the common dir).
func (p *Project) Linked() bool { return p.GitDir != p.CommonDir }

// revParseArgs is the argv of the single rev-parse call Find makes. Each answer is on its own line
// in this order.
func revParseArgs() []string {
	return []string{"rev-parse", "--path-format=absolute", "--is-bare-repository",
		"--show-toplevel", "--absolute-git-dir", "--git-common-dir"}
}

// Find asks git about dir (as git -C dir would see it, honouring GIT_DIR and GIT_WORK_TREE in the
// environment) and returns the project.
func Find(ctx context.Context, dir string) (*Project, error) {
	out, err := gitcli.Git{Dir: dir}.Output(ctx, revParseArgs()...)
	if err != nil {
		var ge *gitcli.Error
		if errors.As(err, &ge) && ge.ExitCode == 128 {
			// A bare repository fails --show-toplevel; ask once more to say why.
			if out, err := (gitcli.Git{Dir: dir}).Output(ctx, "rev-parse", "--is-bare-repository"); err == nil && strings.TrimSpace(string(out)) == "true" {
				return nil, ErrBare
			}
			return nil, fmt.Errorf("%w (at %s): %s", ErrNotRepository, dir, ge.Stderr)
		}
		return nil, err
	}
	return parseRevParse(string(out))
}

// parseRevParse turns the output of revParseArgs into a Project.
func parseRevParse(out string) (*Project, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) >= 1 && lines[0] == "true" {
		return nil, ErrBare
	}
	if len(lines) != 4 || lines[0] != "false" {
		return nil, fmt.Errorf("%w: unexpected git rev-parse output %q", ErrNotRepository, out)
	}
	top, gitDir, common := lines[1], lines[2], lines[3]
	if top == "" {
		return nil, fmt.Errorf("%w: git reports no work tree", ErrNotRepository)
	}
	real, err := filepath.EvalSymlinks(top)
	if err != nil {
		return nil, fmt.Errorf("resolve work tree %q: %w", top, err)
	}
	return &Project{
		TopLevel:  real,
		GitDir:    filepath.Clean(gitDir),
		CommonDir: filepath.Clean(common),
		Box:       BoxName(real),
	}, nil
}

// maxSlug bounds the readable part of a box name: Lima puts the name into unix socket paths,
// which are limited to 108 bytes.
const maxSlug = 20

// BoxName derives the box name of a work tree from its real path: a slug of the directory name
// and the first 6 hex digits of sha256 of the path.
func BoxName(realTop string) string {
	sum := sha256.Sum256([]byte(realTop))
	return Slug(filepath.Base(realTop)) + "-" + hex.EncodeToString(sum[:])[:6]
}

// Slug lower-cases name and keeps [a-z0-9], turning runs of anything else into one hyphen, so
// that the result is a valid Lima instance name and a safe file name.
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= maxSlug {
				break
			}
			continue
		}
		dash = true
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "box"
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "b" + s
		if len(s) > maxSlug {
			s = s[:maxSlug]
		}
	}
	return s
}
