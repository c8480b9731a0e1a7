package clone

// Snapshot rules (source = "clone" for an existing checkout): the box gets what git tracks, never
// what it does not. The committed content comes through Fetch of the checkout as a local
// source; SnapshotTracked adds, when asked, the work tree's current content of tracked files
// only — every path comes from the checkout's index, files are read through an os.Root at the
// top level (no symlink in a parent can lead outside it), a deleted tracked file is left out,
// and an untracked file (.env, build output, credentials) is never opened at all.

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// SnapshotRef holds the snapshot commit in a store; Deliver applies it to the box's work tree as
// uncommitted changes and deletes it there.
const SnapshotRef = plumbing.ReferenceName("refs/tags/corral-uncommitted")

// SnapshotTracked records the tracked files of the checkout at top, as they are in its work tree,
// as a commit whose parent is the store's HEAD commit, at SnapshotRef in store. It reports
// whether anything differs from HEAD (when nothing does, no ref is written).
func SnapshotTracked(ctx context.Context, top, store string) (bool, error) {
	src, err := OpenLocal(top)
	if err != nil {
		return false, err
	}
	idx, err := src.Index()
	if err != nil {
		return false, fmt.Errorf("read index of %s: %w", top, err)
	}
	dst, err := openStore(store)
	if err != nil {
		return false, err
	}
	head, err := storeHead(dst)
	if err != nil {
		return false, err
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		return false, err
	}
	defer root.Close()
	files := map[string]object.TreeEntry{}
	for _, e := range idx.Entries {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		te, ok, err := snapshotEntry(root, dst, e)
		if err != nil {
			return false, err
		}
		if ok {
			files[e.Name] = te
		}
	}
	tree, err := writeTrees(dst, files)
	if err != nil {
		return false, err
	}
	if tree == head.TreeHash {
		return false, nil
	}
	return true, writeSnapshotCommit(dst, head, tree)
}

func storeHead(s storer.Storer) (*object.Commit, error) {
	ref, err := storer.ResolveReference(s.(storer.ReferenceStorer), plumbing.HEAD)
	if err != nil {
		return nil, fmt.Errorf("store HEAD: %w", err)
	}
	return object.GetCommit(s.(storer.EncodedObjectStorer), ref.Hash())
}

// snapshotEntry turns one index entry into a tree entry with the work tree's content. ok is false
// for a tracked file that is deleted from the work tree.
func snapshotEntry(root *os.Root, dst storer.EncodedObjectStorer, e *index.Entry) (object.TreeEntry, bool, error) {
	if e.Stage != 0 { // not index.Merged: go-git defines it as 1, but git stores merged entries as stage 0
		return object.TreeEntry{}, false, fmt.Errorf("snapshot: %q has unresolved conflicts; resolve them first", e.Name)
	}
	if why := pathProblem(e.Name); why != "" {
		return object.TreeEntry{}, false, fmt.Errorf("snapshot: index path %q: %s", e.Name, why)
	}
	te := object.TreeEntry{Name: e.Name, Mode: e.Mode, Hash: e.Hash}
	if e.Mode == filemode.Submodule || e.SkipWorktree {
		return te, true, nil
	}
	fi, err := root.Lstat(e.Name)
	if os.IsNotExist(err) {
		return te, false, nil
	}
	if err != nil {
		return te, false, fmt.Errorf("snapshot %q: %w", e.Name, err)
	}
	var data []byte
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(e.Name)
		if err != nil {
			return te, false, err
		}
		te.Mode, data = filemode.Symlink, []byte(target)
	case fi.Mode().IsRegular():
		if data, err = root.ReadFile(e.Name); err != nil {
			return te, false, err
		}
		te.Mode = filemode.Regular
		if fi.Mode()&0o111 != 0 {
			te.Mode = filemode.Executable
		}
	default:
		return te, false, nil // a directory or device where a file was tracked: deleted
	}
	te.Hash, err = putObject(dst, plumbing.BlobObject, data)
	return te, true, err
}

func putObject(s storer.EncodedObjectStorer, t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, data)
	if s.HasEncodedObject(h) == nil {
		return h, nil
	}
	o := s.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(data)))
	w, err := o.Writer()
	if err != nil {
		return h, err
	}
	if _, err := w.Write(data); err != nil {
		return h, err
	}
	if err := w.Close(); err != nil {
		return h, err
	}
	return s.SetEncodedObject(o)
}

// writeTrees writes the nested trees of files (full path → entry) and returns the root tree.
func writeTrees(s storer.EncodedObjectStorer, files map[string]object.TreeEntry) (plumbing.Hash, error) {
	dirs := map[string][]object.TreeEntry{"": nil}
	var paths []string
	for p, e := range files {
		dir, name := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		e.Name = name
		for d := dir; d != "" && d != "."; d = path.Dir(d) {
			if _, seen := dirs[d]; seen {
				break
			}
			dirs[d] = nil
			paths = append(paths, d)
		}
		dirs[dir] = append(dirs[dir], e)
	}
	// Deepest directories first, so each parent sees its children's hashes.
	sort.Slice(paths, func(i, j int) bool { return strings.Count(paths[i], "/") > strings.Count(paths[j], "/") })
	for _, d := range paths {
		h, err := writeTree(s, dirs[d])
		if err != nil {
			return h, err
		}
		parent := path.Dir(d)
		if parent == "." {
			parent = ""
		}
		dirs[parent] = append(dirs[parent], object.TreeEntry{Name: path.Base(d), Mode: filemode.Dir, Hash: h})
	}
	return writeTree(s, dirs[""])
}

// writeTree encodes entries in git's order (a directory sorts as if its name ended in '/').
func writeTree(s storer.EncodedObjectStorer, entries []object.TreeEntry) (plumbing.Hash, error) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	var b bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&b, "%o %s\x00", uint32(e.Mode), e.Name)
		b.Write(e.Hash[:])
	}
	return putObject(s, plumbing.TreeObject, b.Bytes())
}

func writeSnapshotCommit(s storer.Storer, head *object.Commit, tree plumbing.Hash) error {
	sig := object.Signature{Name: "git corral", Email: "corral@localhost", When: time.Unix(head.Committer.When.Unix(), 0).UTC()}
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: tree, ParentHashes: []plumbing.Hash{head.Hash},
		Message: "corral: uncommitted changes to tracked files\n"}
	o := s.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return err
	}
	h, err := s.SetEncodedObject(o)
	if err != nil {
		return err
	}
	return s.SetReference(plumbing.NewHashReference(SnapshotRef, h))
}
