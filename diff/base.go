package diff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/gitcli"
	"github.com/git-corral/git-corral/project"
)

// RefPrefix is where session bases are recorded in the repository.
const RefPrefix = "refs/corral/sessions/"

// BaseOptions tunes RecordBaseWith. The zero value is usable.
type BaseOptions struct {
	// Home is the state directory ($CORRAL_HOME); empty resolves it from the environment.
	Home string
	// Workers bounds parallel hashing; 0 means the number of CPUs.
	Workers int
	// Now gives the base's time; nil means time.Now.
	Now func() time.Time
}

// validBox is what a box name may hold (project.BoxName makes them so); it keeps the ref and the
// manifest path free of separators and ref syntax.
var validBox = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// RecordBase records the work tree's state as a session base for box: a commit under
// refs/corral/sessions/<box>/<timestamp> (tracked and untracked files, ignored ones too, files
// larger than 1 MiB hashed but left out of the commit unless git already has their blob) and the
// trusted manifest under $CORRAL_HOME/sessions/<box>/. It never touches the index or HEAD and
// never runs a filter, hook or any other repository-defined program: blobs are written from raw
// bytes with go-git. It returns the ref.
func RecordBase(ctx context.Context, p *project.Project, box string) (string, error) {
	return RecordBaseWith(ctx, p, box, BaseOptions{})
}

// RecordBaseWith is RecordBase with options.
func RecordBaseWith(ctx context.Context, p *project.Project, box string, o BaseOptions) (string, error) {
	if p == nil {
		return "", fmt.Errorf("record session base: no project")
	}
	if !validBox.MatchString(box) {
		return "", fmt.Errorf("record session base: invalid box name %q", box)
	}
	o, err := o.fill()
	if err != nil {
		return "", err
	}
	es, err := walk(ctx, p.TopLevel, p.CommonDir, o.Workers)
	if err != nil {
		return "", fmt.Errorf("record session base: %w", err)
	}
	absOf := func(e *entry) string { return entryAbs(p, e) }
	if err := hashAll(ctx, absOf, es, o.Workers, func(*entry) bool { return true }); err != nil {
		return "", err
	}
	repo, err := git.PlainOpenWithOptions(p.TopLevel, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return "", fmt.Errorf("record session base: open repository %q: %w", p.TopLevel, err)
	}
	skip, err := ignoredDirs(ctx, p.TopLevel)
	if err != nil {
		return "", fmt.Errorf("record session base: %w", err)
	}
	if err := storeBlobs(absOf, repo.Storer, es, skip); err != nil {
		return "", err
	}
	inlineGitMeta(p, es)
	now := o.Now()
	tree, err := writeTrees(repo.Storer, es)
	if err != nil {
		return "", err
	}
	commit, err := writeCommit(repo, tree, box, now)
	if err != nil {
		return "", err
	}
	ref := plumbing.ReferenceName(RefPrefix + box + "/" + stamp(now))
	if err := repo.Storer.SetReference(plumbing.NewHashReference(ref, commit)); err != nil {
		return "", fmt.Errorf("record session base: set %s: %w", ref, err)
	}
	m := &manifest{manifestHeader: manifestHeader{Box: box, Ref: ref.String(), Commit: commit.String(),
		TopLevel: p.TopLevel, Created: now}, Entries: es}
	if _, err := saveManifest(o.Home, m); err != nil {
		return "", err
	}
	return ref.String(), nil
}

func (o BaseOptions) fill() (BaseOptions, error) {
	if o.Home == "" {
		h, err := home.Resolve(os.Getenv)
		if err != nil {
			return o, err
		}
		o.Home = h.Dir
	}
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// inCommit reports whether a walked entry may go into a git tree: git refuses ".git" in any
// case as a path component, and the metadata and special files have no tree form.
func inCommit(e *entry) bool {
	if e.Flags&(flagGitMeta|flagNestedGit) != 0 || !e.Have {
		return false
	}
	if e.Kind != KindFile && e.Kind != KindSymlink {
		return false
	}
	for _, c := range strings.Split(e.Path, "/") {
		if strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}

// storeBlobs writes the blob of every committable entry git does not have yet, from the bytes
// read now (re-hashed: the file may have changed since the walk). Files over keepInMem whose
// blob git lacks stay out of the commit; the manifest still has their hash.
func storeBlobs(absOf func(*entry) string, st storage.Storer, es []*entry, skip []string) error {
	for _, e := range es {
		if !inCommit(e) {
			continue
		}
		if underAny(e.Path, skip) {
			continue // an ignored directory (node_modules, target/…): manifest only
		}
		if st.HasEncodedObject(plumbing.Hash(e.Hash)) == nil {
			e.Flags |= flagInCommit
			continue
		}
		if e.Size > keepInMem {
			continue
		}
		data, err := hashEntry(absOf(e), e, true)
		if err != nil {
			e.Have, e.ReadErr = false, err.Error()
			continue
		}
		obj := st.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, err := obj.Writer()
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		w.Close()
		if _, err := st.SetEncodedObject(obj); err != nil {
			return fmt.Errorf("record session base: write blob of %q: %w", e.Path, err)
		}
		e.Flags |= flagInCommit
	}
	return nil
}

// ignoredDirs lists the directories git ignores in the work tree (node_modules/, target/…),
// whose files go into the manifest but not into the base commit, so that a session base does not
// copy a dependency tree into the repository. Single ignored files (.envrc, .env) are still
// committed. Only what goes into the commit depends on ignore rules, never what is compared.
// git runs with fsmonitor and hooks off and replace objects disabled.
func ignoredDirs(ctx context.Context, top string) ([]string, error) {
	g := gitcli.Git{Dir: top, Env: []string{"GIT_NO_REPLACE_OBJECTS=1", "GIT_OPTIONAL_LOCKS=0"}}
	out, err := g.Output(ctx, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
		"-c", "core.untrackedCache=false", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, p := range strings.Split(string(out), "\x00") {
		if strings.HasSuffix(p, "/") {
			dirs = append(dirs, p)
		}
	}
	return dirs, nil
}

// underAny reports whether p lies under one of the directories (each ending in "/").
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// inlineGitMeta keeps the bytes of small git metadata files in the manifest.
func inlineGitMeta(p *project.Project, es []*entry) {
	for _, e := range es {
		if e.Flags&flagGitMeta == 0 || e.Kind != KindFile || e.Size > maxInline {
			continue
		}
		if data, err := readVerified(entryAbs(p, e), e, maxInline); err == nil {
			e.Data, e.Hash, e.Have = data, blobHash(data), true
		}
	}
}

// entryAbs maps an entry's path back to the file system: the top-level git metadata is listed
// under ".git/" but lives in the common git dir.
func entryAbs(p *project.Project, e *entry) string {
	if e.Flags&flagGitMeta != 0 {
		if inner, ok := strings.CutPrefix(e.Path, ".git/"); ok {
			return filepath.Join(p.CommonDir, filepath.FromSlash(inner))
		}
	}
	return filepath.Join(p.TopLevel, filepath.FromSlash(e.Path))
}

// treeNode is a directory being assembled into a git tree.
type treeNode struct {
	files map[string]*entry
	dirs  map[string]*treeNode
}

// writeTrees writes the tree of every entry marked flagInCommit and returns the root hash.
func writeTrees(st storage.Storer, es []*entry) (plumbing.Hash, error) {
	root := &treeNode{files: map[string]*entry{}, dirs: map[string]*treeNode{}}
	for _, e := range es {
		if e.Flags&flagInCommit == 0 {
			continue
		}
		n := root
		parts := strings.Split(e.Path, "/")
		for _, d := range parts[:len(parts)-1] {
			if n.dirs[d] == nil {
				n.dirs[d] = &treeNode{files: map[string]*entry{}, dirs: map[string]*treeNode{}}
			}
			n = n.dirs[d]
		}
		n.files[parts[len(parts)-1]] = e
	}
	return root.write(st)
}

func (n *treeNode) write(st storage.Storer) (plumbing.Hash, error) {
	var t object.Tree
	for name, e := range n.files {
		if _, clash := n.dirs[name]; clash {
			continue
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.FileMode(e.gitMode()), Hash: plumbing.Hash(e.Hash)})
	}
	for name, d := range n.dirs {
		h, err := d.write(st)
		if err != nil {
			return h, err
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	// git orders tree entries by name, comparing a directory as if its name ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
	obj := st.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}

// writeCommit writes the base commit, with HEAD as parent when there is one.
func writeCommit(repo *git.Repository, tree plumbing.Hash, box string, now time.Time) (plumbing.Hash, error) {
	sig := object.Signature{Name: "git corral", Email: "corral@localhost", When: now}
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: tree,
		Message: "git corral session base for box " + box + "\n"}
	if head, err := repo.Head(); err == nil {
		c.ParentHashes = []plumbing.Hash{head.Hash()}
	}
	obj := repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return h, fmt.Errorf("record session base: write commit: %w", err)
	}
	return h, nil
}
