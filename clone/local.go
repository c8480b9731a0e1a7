package clone

// Local source rules: a repository on the host's disk is read through its ref and object
// storage only (go-git's filesystem storage), never its config, hooks, attributes or work tree.
// Refused: objects/info/alternates (it would pull objects from other repositories on the host
// into the box) and a symlinked objects/, refs/ or packed-refs (the same, by another road).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// OpenLocal opens the git storage of the repository at dir (a work tree with .git, a linked
// worktree whose .git is a file, or a bare repository), without reading its config.
func OpenLocal(dir string) (*filesystem.Storage, error) {
	s, _, err := openLocal(dir)
	return s, err
}

// openLocal is OpenLocal, also returning the common git dir.
func openLocal(dir string) (*filesystem.Storage, string, error) {
	gitDir, common, err := localGitDirs(dir)
	if err != nil {
		return nil, "", err
	}
	for _, p := range []string{"objects", "refs", "packed-refs"} {
		if fi, err := os.Lstat(filepath.Join(common, p)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, "", fmt.Errorf("%w: %s is a symlink", ErrSource, filepath.Join(common, p))
		}
	}
	if _, err := os.Lstat(filepath.Join(common, "objects", "info", "alternates")); err == nil {
		return nil, "", fmt.Errorf("%w: %s borrows objects from other repositories (objects/info/alternates)", ErrSource, common)
	}
	var fs billy.Filesystem = osfs.New(gitDir)
	if common != gitDir {
		fs = dotgit.NewRepositoryFilesystem(fs, osfs.New(common))
	}
	return filesystem.NewStorage(fs, cache.NewObjectLRUDefault()), common, nil
}

// localGitDirs finds the git dir and common dir of dir without running git.
func localGitDirs(dir string) (string, string, error) {
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case err == nil && fi.IsDir():
		return dotGit, dotGit, nil
	case err == nil && fi.Mode().IsRegular():
		data, err := os.ReadFile(dotGit)
		if err != nil {
			return "", "", err
		}
		line := strings.TrimSpace(string(data))
		target, ok := strings.CutPrefix(line, "gitdir: ")
		if !ok || strings.ContainsAny(target, "\n\r") {
			return "", "", fmt.Errorf("%w: %s is not a gitdir file", ErrSource, dotGit)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		return target, commonDir(target), nil
	}
	if isGitDir(dir) {
		return dir, commonDir(dir), nil
	}
	return "", "", fmt.Errorf("%w: %s is not a git repository", ErrSource, dir)
}

func isGitDir(dir string) bool {
	for _, p := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// commonDir follows a linked worktree's commondir file.
func commonDir(gitDir string) string {
	data, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return gitDir
	}
	c := strings.TrimSpace(string(data))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	return filepath.Clean(c)
}

// transferLocal checks a local repository's refs and objects under the caps before go-git reads
// any (checkLocalStorage), then reads its branches, tags and HEAD and copies every object they
// reach, as a pack written by go-git, through the same capped pipeline as a network fetch.
func transferLocal(ctx context.Context, src Source, s storer.Storer, f *os.File, l Limits, fs *findings) (*wanted, error) {
	from, common, err := openLocal(src.URL)
	if err != nil {
		return nil, err
	}
	if err := checkLocalStorage(ctx, common, l); err != nil {
		return nil, err
	}
	w, err := localRefs(from, fs)
	if err != nil {
		return nil, err
	}
	if err := fs.err(); err != nil {
		return nil, err
	}
	return w, copyObjects(ctx, from, w, s, f, l)
}

func localRefs(from storer.ReferenceStorer, fs *findings) (*wanted, error) {
	iter, err := from.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	all := map[string]plumbing.Hash{}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			all[r.Name().String()] = r.Hash()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	w := &wanted{refs: selectRefs(all, fs)}
	if head, err := from.Reference(plumbing.HEAD); err == nil {
		if head.Type() == plumbing.SymbolicReference {
			w.head = head.Target()
		} else {
			w.headHash = head.Hash()
		}
	}
	if len(w.refs) == 0 && len(fs.problems) == 0 {
		return nil, errors.New("no branches or tags to copy")
	}
	return w, nil
}

// copyObjects packs everything reachable from the wanted refs in from and runs it through the
// pack pipeline into s.
func copyObjects(ctx context.Context, from storer.EncodedObjectStorer, w *wanted, s storer.Storer, f *os.File, l Limits) error {
	var tips []plumbing.Hash
	for _, h := range w.refs {
		tips = append(tips, h)
	}
	hashes, err := revlist.Objects(from, tips, nil)
	if err != nil {
		return fmt.Errorf("walk objects: %w", err)
	}
	if int64(len(hashes)) > l.MaxObjects {
		return limitError("%d objects, more than %d", len(hashes), l.MaxObjects)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := packfile.NewEncoder(pw, from, false).Encode(hashes, 0)
		pw.CloseWithError(err)
	}()
	err = receiveScanStore(ctx, pr, s, f, l)
	pr.CloseWithError(errors.New("pack pipeline stopped"))
	return err
}
