package clone

// Tree rules: every tree object in the fetched data (reachable or not) is read, and every entry
// must pass componentProblem; modes must be one of git's five; within one tree no two names may
// be equal or fold to the same name when one of them is a symlink (the case-insensitive
// "symlink, then write through it" checkout attack); .gitmodules, .gitattributes, .gitignore and
// .mailmap must not be symlinks; a symlink's target must not name a .git directory (warned when
// it leaves the tree); and from every commit's root, nesting and path length stay within Limits.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// maxSymlinkTarget bounds a symlink blob (PATH_MAX).
const maxSymlinkTarget = 4096

// maxGitmodules bounds a .gitmodules blob read for validation.
const maxGitmodules = 1 << 20

// checker validates the objects of one store.
type checker struct {
	s      storer.EncodedObjectStorer
	limits Limits
	findings
	// below memoises the deepest nesting and longest path under each tree.
	below map[plumbing.Hash][2]int
}

func newChecker(s storer.EncodedObjectStorer, l Limits) *checker {
	return &checker{s: s, limits: l, below: map[plumbing.Hash][2]int{}}
}

// checkTrees reads every tree object in the store.
func (c *checker) checkTrees(ctx context.Context) error {
	iter, err := c.s.IterEncodedObjects(plumbing.TreeObject)
	if err != nil {
		return fmt.Errorf("list trees: %w", err)
	}
	defer iter.Close()
	for !c.full() {
		o, err := iter.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read trees: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		c.checkTree(o)
	}
	return nil
}

func (c *checker) checkTree(o plumbing.EncodedObject) {
	entries, err := parseTree(o)
	if err != nil {
		c.refuse(Finding{Class: ClassTree, Object: o.Hash().String(), Reason: "malformed tree: " + err.Error()})
		return
	}
	byFold := map[string]object.TreeEntry{}
	for _, re := range entries {
		e := re.TreeEntry
		if re.badMode != "" {
			c.refuse(Finding{Class: ClassTree, Object: o.Hash().String(), Path: e.Name, Reason: fmt.Sprintf("mode %q is not a git tree mode", re.badMode)})
		} else {
			c.checkEntry(o.Hash(), e)
		}
		f := foldName(e.Name)
		if prev, dup := byFold[f]; dup {
			c.checkCollision(o.Hash(), prev, e)
		}
		byFold[f] = e
	}
}

// treeModes are the modes git writes; legacy ones are read as the mode git reads them as and
// warned. Any other mode refuses the tree (go-git's decoder would silently canonicalise it).
var treeModes = map[string]filemode.FileMode{
	"40000": filemode.Dir, "100644": filemode.Regular, "100755": filemode.Executable,
	"120000": filemode.Symlink, "160000": filemode.Submodule,
}

var legacyModes = map[string]filemode.FileMode{"100664": filemode.Regular, "040000": filemode.Dir}

// rawEntry is a tree entry and, when its stored mode is not one git accepts, that mode.
type rawEntry struct {
	object.TreeEntry
	badMode string
}

// parseTree reads a tree's raw entries: "<mode> <name>\x00<20-byte hash>" repeated.
func parseTree(o plumbing.EncodedObject) ([]rawEntry, error) {
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var out []rawEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+1+20 {
			return nil, errors.New("truncated entry")
		}
		mode, name := string(data[:sp]), string(data[sp+1:nul])
		var h plumbing.Hash
		copy(h[:], data[nul+1:nul+21])
		data = data[nul+21:]
		e := rawEntry{TreeEntry: object.TreeEntry{Name: name, Hash: h}}
		var ok bool
		if e.Mode, ok = treeModes[mode]; !ok {
			if e.Mode, ok = legacyModes[mode]; !ok {
				e.badMode = mode
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func (c *checker) checkEntry(tree plumbing.Hash, e object.TreeEntry) {
	at := func(reason string) Finding {
		return Finding{Class: ClassTree, Object: tree.String(), Path: e.Name, Reason: reason}
	}
	if why := componentProblem(e.Name); why != "" {
		c.refuse(at(why))
		return
	}
	special := specialFile(e.Name)
	switch {
	case special != "" && e.Mode == filemode.Symlink:
		c.refuse(at(special + " must not be a symlink (its target would be read instead)"))
	case special == ".gitmodules" && e.Mode.IsFile():
		c.checkGitmodulesBlob(e.Hash)
	case e.Mode == filemode.Symlink:
		c.checkSymlink(tree, e)
	}
}

// checkCollision handles two entries of one tree that fold to the same name.
func (c *checker) checkCollision(tree plumbing.Hash, a, b object.TreeEntry) {
	f := Finding{Class: ClassTree, Object: tree.String(), Path: b.Name}
	switch {
	case a.Name == b.Name:
		f.Reason = "duplicate entry"
		c.refuse(f)
	case a.Mode == filemode.Symlink || b.Mode == filemode.Symlink:
		f.Reason = fmt.Sprintf("collides with %q on case-insensitive file systems and one is a symlink (write-through)", a.Name)
		c.refuse(f)
	default:
		f.Reason = fmt.Sprintf("collides with %q on case-insensitive file systems", a.Name)
		c.warn(f)
	}
}

func (c *checker) checkSymlink(tree plumbing.Hash, e object.TreeEntry) {
	at := Finding{Class: ClassTree, Object: tree.String(), Path: e.Name}
	target, err := c.readBlob(e.Hash, maxSymlinkTarget)
	if err != nil {
		at.Reason = "symlink target: " + err.Error()
		c.refuse(at)
		return
	}
	t := string(target)
	if t == "" || hasControl(t) {
		at.Reason = "symlink target is empty or holds a control character"
		c.refuse(at)
		return
	}
	for _, part := range strings.FieldsFunc(t, func(r rune) bool { return r == '/' || r == '\\' }) {
		if isDotGitLike(part) {
			at.Reason = fmt.Sprintf("symlink target %q reaches into a .git directory", t)
			c.refuse(at)
			return
		}
	}
	if path.IsAbs(t) || strings.HasPrefix(path.Clean(t), "..") {
		at.Reason = fmt.Sprintf("symlink target %q leaves its directory", t)
		c.warn(at)
	}
}

// readBlob reads a blob of at most max bytes.
func (c *checker) readBlob(h plumbing.Hash, max int64) ([]byte, error) {
	o, err := c.s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	if o.Size() > max {
		return nil, fmt.Errorf("blob %s is %d bytes, more than %d", h, o.Size(), max)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, max))
}
