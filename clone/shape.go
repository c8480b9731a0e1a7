package clone

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// checkCommits measures, from every commit's root tree, the deepest nesting and the longest path,
// and refuses a commit whose tree is missing (the fetched data must be complete).
func (c *checker) checkCommits(ctx context.Context) error {
	iter, err := c.s.IterEncodedObjects(plumbing.CommitObject)
	if err != nil {
		return fmt.Errorf("list commits: %w", err)
	}
	defer iter.Close()
	for !c.full() {
		o, err := iter.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read commits: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var cm object.Commit
		if err := cm.Decode(o); err != nil {
			c.refuse(Finding{Class: ClassTree, Object: o.Hash().String(), Reason: "malformed commit: " + err.Error()})
			continue
		}
		depth, length, err := c.measure(cm.TreeHash, 0)
		switch {
		case err != nil:
			c.refuse(Finding{Class: ClassTree, Object: o.Hash().String(), Reason: err.Error()})
		case depth > c.limits.MaxTreeDepth:
			c.refuse(Finding{Class: ClassLimit, Object: o.Hash().String(), Reason: fmt.Sprintf("tree nests deeper than %d directories", c.limits.MaxTreeDepth)})
		case length > c.limits.MaxPathBytes:
			c.refuse(Finding{Class: ClassLimit, Object: o.Hash().String(), Reason: fmt.Sprintf("a path is longer than %d bytes", c.limits.MaxPathBytes)})
		}
	}
	return nil
}

// measure returns the nesting depth and longest path below tree h, stopping early once either
// exceeds its limit (level is the depth of h itself).
func (c *checker) measure(h plumbing.Hash, level int) (int, int, error) {
	if m, ok := c.below[h]; ok {
		return m[0], m[1], nil
	}
	if level > c.limits.MaxTreeDepth {
		return level, 0, nil
	}
	t, err := object.GetTree(c.s, h)
	if err != nil {
		return 0, 0, fmt.Errorf("tree %s: %w", h, err)
	}
	depth, length := 0, 0
	for _, e := range t.Entries {
		l := len(e.Name)
		if e.Mode == filemode.Dir {
			d, sub, err := c.measure(e.Hash, level+1)
			if err != nil {
				return 0, 0, err
			}
			depth = max(depth, d+1)
			l += 1 + sub
		}
		length = max(length, l)
		if depth > c.limits.MaxTreeDepth || length > c.limits.MaxPathBytes {
			break
		}
	}
	c.below[h] = [2]int{depth, length}
	return depth, length, nil
}
