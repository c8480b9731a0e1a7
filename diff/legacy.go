package diff

// Older versions recorded each session base as a commit under refs/corral/sessions/<box>/<time>
// in the repository itself, ignored files (.env) included, where a push --mirror or a backup
// would publish them. Record and Compare remove those refs. Rules:
//
//   - Only refs whose name starts with refs/corral/sessions/ are deleted, never another ref:
//     not refs/corral/<box>/… (fetch), not a ref a symbolic ref under the prefix points to
//     (--no-deref), whatever the box planted there.
//   - git runs through gitcli with hooks off (reference-transaction) and fsmonitor off; the
//     names travel NUL-separated on stdin, never on a command line.
//   - The caller gets one notice: how many were removed and what happens to their objects, or
//     why they could not be and the command that removes them. A failure never stops a diff.
//   - git runs only when the repository may hold such a ref: every session records a base, and
//     a git process before the session starts is most of a short command's host-side time.
//     Without a reftable, a ref is a file under refs/ or a line of packed-refs; with neither
//     under the prefix there is none, and git is asked whenever that cannot be told.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-corral/git-corral/internal/gitcli"
	"github.com/git-corral/git-corral/project"
)

// legacyRefPrefix is where older versions recorded session bases in the repository.
const legacyRefPrefix = "refs/corral/sessions/"

// legacyRemoveCmd is what the user can run when the removal failed.
const legacyRemoveCmd = `git for-each-ref --format='delete %(refname)' refs/corral/sessions/ | git update-ref --no-deref --stdin`

// safeGitArgs switches off what a repository could make git run.
var safeGitArgs = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}

// removeLegacyRefs deletes the refs under legacyRefPrefix in p's repository and returns the
// notice for the user, or "" when there were none.
func removeLegacyRefs(ctx context.Context, p *project.Project) string {
	if !mayHaveLegacyRefs(p.CommonDir) {
		return ""
	}
	g := gitcli.Git{Dir: p.TopLevel, Env: []string{"GIT_OPTIONAL_LOCKS=0"}}
	out, err := g.Output(ctx, slices.Concat(safeGitArgs, []string{"for-each-ref", "--format=%(refname)", legacyRefPrefix})...)
	if err != nil {
		return fmt.Sprintf("could not list the session bases older versions of git corral kept under %s: %v", legacyRefPrefix, err)
	}
	refs := legacyRefs(string(out))
	if len(refs) == 0 {
		return ""
	}
	g.Stdin = strings.NewReader(deleteCommands(refs))
	if _, err := g.Output(ctx, slices.Concat(safeGitArgs, []string{"update-ref", "--no-deref", "-z", "--stdin"})...); err != nil {
		return fmt.Sprintf("could not remove the %d session base(s) older versions of git corral kept under %s (copies of ignored files such as .env among them): %v; remove them with: %s",
			len(refs), legacyRefPrefix, err, legacyRemoveCmd)
	}
	return fmt.Sprintf("removed %d session base(s) that older versions of git corral kept in this repository under %s (copies of ignored files such as .env among them); "+
		"their objects stay until 'git gc' prunes unreachable objects (after two weeks by default; 'git gc --prune=now' does it now)",
		len(refs), legacyRefPrefix)
}

// mayHaveLegacyRefs reports whether the repository whose common git dir is common may hold a
// ref under legacyRefPrefix: false only when its refs are files (no reftable), no file or
// directory is at refs/corral/sessions and packed-refs has no line naming one.
func mayHaveLegacyRefs(common string) bool {
	if _, err := os.Lstat(filepath.Join(common, "reftable")); !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if _, err := os.Lstat(filepath.Join(common, filepath.FromSlash(strings.TrimSuffix(legacyRefPrefix, "/")))); !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	packed, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return err != nil || bytes.Contains(packed, []byte(" "+legacyRefPrefix))
}

// legacyRefs parses for-each-ref's output, keeping only names under the prefix with no
// component git would refuse (the check git itself made; repeated so that a name can never
// reach another ref).
func legacyRefs(out string) []string {
	var refs []string
	for _, name := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(name, legacyRefPrefix)
		if !ok || rest == "" || strings.Contains(rest, "..") || strings.ContainsAny(rest, "\x00 ~^:?*[\\") {
			continue
		}
		refs = append(refs, name)
	}
	return refs
}

// deleteCommands is update-ref's -z --stdin input deleting each ref whatever it points to.
func deleteCommands(refs []string) string {
	var b strings.Builder
	for _, r := range refs {
		b.WriteString("delete " + r + "\x00\x00")
	}
	return b.String()
}
