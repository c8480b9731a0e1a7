package cover

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrHiddenTracked is wrapped by CheckClone's error: clone mode would deliver a hidden path.
var ErrHiddenTracked = errors.New("clone mode would deliver a hidden path")

// CheckClone refuses clone mode for the checkout at top when a hidden path (hide, resolved on
// the host) would reach the box: clone mode delivers the history of every branch and tag, and
// the index's tracked files when uncommitted changes are delivered, so a hidden path in any
// commit reachable from refs/heads or refs/tags, or in the index, is refused naming it. An
// untracked path is never delivered. Paths are compared as stored in git, byte for byte.
func CheckClone(top string, hide []string) error {
	if len(hide) == 0 {
		return nil
	}
	repo, err := git.PlainOpenWithOptions(top, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return fmt.Errorf("check hidden paths in %q: %w", top, err)
	}
	refs, err := repo.References()
	if err != nil {
		return fmt.Errorf("check hidden paths in %q: %w", top, err)
	}
	var tips []plumbing.Hash
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		n := r.Name().String()
		if r.Type() == plumbing.HashReference && (strings.HasPrefix(n, "refs/heads/") || strings.HasPrefix(n, "refs/tags/")) {
			tips = append(tips, r.Hash())
		}
		return nil
	})
	seen := map[plumbing.Hash]bool{}
	for _, tip := range tips {
		if err := checkHistory(repo, tip, hide, seen); err != nil {
			return err
		}
	}
	if idx, err := repo.Storer.Index(); err == nil {
		for _, e := range idx.Entries {
			if h := coveredBy(e.Name, hide); h != "" {
				return fmt.Errorf("%w: hide %q: %q is tracked in the index", ErrHiddenTracked, h, e.Name)
			}
		}
	}
	return nil
}

// checkHistory walks the commits reachable from tip (an annotated tag is peeled) not seen yet.
func checkHistory(repo *git.Repository, tip plumbing.Hash, hide []string, seen map[plumbing.Hash]bool) error {
	if tag, err := repo.TagObject(tip); err == nil {
		c, err := tag.Commit()
		if err != nil {
			return nil // a tag of a tree or blob delivers no commit
		}
		tip = c.Hash
	}
	c, err := repo.CommitObject(tip)
	if err != nil {
		return fmt.Errorf("check hidden paths: read commit %s: %w", tip, err)
	}
	stack := []*object.Commit{c}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[c.Hash] {
			continue
		}
		seen[c.Hash] = true
		tree, err := c.Tree()
		if err != nil {
			return fmt.Errorf("check hidden paths: tree of %s: %w", c.Hash, err)
		}
		for _, h := range hide {
			if _, err := tree.FindEntry(h); err == nil {
				return fmt.Errorf("%w: hide %q is in commit %s", ErrHiddenTracked, h, c.Hash)
			}
		}
		_ = c.Parents().ForEach(func(p *object.Commit) error {
			stack = append(stack, p)
			return nil
		})
	}
	return nil
}

// coveredBy returns the hidden path that name is or lies under, or "".
func coveredBy(name string, hide []string) string {
	for _, h := range hide {
		if name == h || strings.HasPrefix(name, h+"/") {
			return h
		}
	}
	return ""
}
