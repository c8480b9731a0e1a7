package diff

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// baseSet is what the work tree is compared against.
type baseSet struct {
	info    BaseInfo
	entries []*entry // sorted by Path
}

// loadBase returns the latest session base (rev empty), read from the manifest at latestPath,
// or the tree of rev. A revision base
// borrows the git metadata of the latest session base, when there is one, since commits do not
// hold it. go-git never applies replace refs or grafts, so a planted refs/replace cannot swap
// what rev means.
func loadBase(repo *git.Repository, rev string, latest *manifest, latestPath string) (*baseSet, error) {
	if rev == "" {
		if latest == nil {
			return nil, ErrNoBase
		}
		return &baseSet{entries: latest.Entries, info: BaseInfo{Kind: "session", Path: latestPath,
			Created: &latest.Created, GitMetaCompared: true}}, nil
	}
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("resolve base revision %q: %w", rev, err)
	}
	commit, err := repo.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("read base commit %s: %w", h, err)
	}
	es, err := treeEntries(commit)
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", h, err)
	}
	b := &baseSet{entries: es, info: BaseInfo{Kind: "revision", Ref: rev, Commit: h.String()}}
	if latest != nil {
		for _, e := range latest.Entries {
			if e.Flags&flagGitMeta != 0 && len(e.Path) > 5 && e.Path[:5] == ".git/" {
				b.entries = append(b.entries, e)
			}
		}
		b.info.GitMetaCompared = true
		sort.Slice(b.entries, func(i, j int) bool { return b.entries[i].Path < b.entries[j].Path })
	}
	return b, nil
}

// treeEntries lists a commit's blobs and symlinks as entries. Gitlinks (submodules) are left out,
// so files under them count as added: the work tree is compared, not git's idea of it.
func treeEntries(c *object.Commit) ([]*entry, error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	var out []*entry
	for {
		name, te, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		e := &entry{Path: name, Hash: [20]byte(te.Hash), Have: true}
		switch te.Mode {
		case filemode.Symlink:
			e.Kind, e.Mode = KindSymlink, 0o120777
		case filemode.Executable:
			e.Kind, e.Mode = KindFile, 0o100755
		case filemode.Regular, filemode.Deprecated:
			e.Kind, e.Mode = KindFile, 0o100644
		default:
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
