package diff

// The walker's rules: it reads the file system, never git's index, ignore rules or attributes.
// Every directory entry under the top level is listed with lstat (symlinks are never followed),
// except the contents of directories named exactly ".git", of which only the metadata that makes
// git run code is listed (gitMetaWanted). A ".git" whose case differs (".GIT") is walked as an
// ordinary directory, because git on Linux ignores it but a case-insensitive host resolves it to
// the real git dir; classify flags it.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Kind is the file-system type of an entry.
type Kind uint8

// Kinds of entries.
const (
	KindFile Kind = iota + 1
	KindSymlink
	KindDir     // only recorded for nested .git dirs and bare repositories
	KindSpecial // FIFO, socket, device
)

// String names the kind as the JSON output does.
func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindSymlink:
		return "symlink"
	case KindDir:
		return "dir"
	case KindSpecial:
		return "special"
	}
	return "unknown"
}

// Flags mark entries with a role beyond their content.
const (
	flagGitMeta   = 1 << iota // a file of git metadata (".git/config", "sub/.git/hooks/x")
	flagNestedGit             // a ".git" dir or file below the top level, or a bare repository
	flagStored                // the bytes are in the session-base store (older versions: in the repository)
)

// entry is one walked path with what lstat said and, once known, its git blob hash.
type entry struct {
	Path  string // slash-separated, relative to the top level
	Kind  Kind
	Mode  uint32 // st_mode
	Size  int64
	Mtime int64 // ns
	Ctime int64 // ns
	Ino   uint64
	Dev   uint64
	Hash  [20]byte // git blob hash of the content (or of the link target)
	Have  bool     // Hash is set
	Flags uint8
	// Data is the inline content of small git metadata files, kept in the host-side manifest so
	// their old text can be shown even when the box rewrites the repository's objects.
	Data []byte
	// ReadErr says why the content could not be hashed (not stored in the manifest).
	ReadErr string
}

// exec reports whether any execute bit is set on a regular file.
func (e *entry) exec() bool { return e.Kind == KindFile && e.Mode&0o111 != 0 }

// gitMode is the tree mode git would record for the entry.
func (e *entry) gitMode() uint32 {
	switch {
	case e.Kind == KindSymlink:
		return 0o120000
	case e.exec():
		return 0o100755
	case e.Kind == KindFile:
		return 0o100644
	}
	return 0
}

// walk lists every path under top (see the rules above), plus the git metadata of gitDir under
// the ".git/" prefix. The result is sorted by path.
func walk(ctx context.Context, top, gitDir string, workers int) ([]*entry, error) {
	w := &walker{top: top, sem: make(chan struct{}, workers),
		topGitSkipped: gitDir == filepath.Join(top, ".git")}
	w.wg.Add(1)
	go w.dir(ctx, "", nil)
	w.wg.Wait()
	if gitDir != "" {
		w.gitMeta(gitDir, ".git", 0)
	}
	if err := errors.Join(w.errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(w.out, func(a, b *entry) int { return strings.Compare(a.Path, b.Path) })
	return w.out, nil
}

type walker struct {
	top string
	// topGitSkipped: top/.git is the repository's git dir, listed by gitMeta instead.
	topGitSkipped bool
	sem           chan struct{}
	wg            sync.WaitGroup
	mu            sync.Mutex
	out           []*entry
	errs          []error
}

func (w *walker) add(es ...*entry) {
	w.mu.Lock()
	w.out = append(w.out, es...)
	w.mu.Unlock()
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
}

// dir lists one directory; subdirectories are walked concurrently, bounded by sem.
// want is the directory's lstat as its parent saw it (nil for the top level).
func (w *walker) dir(ctx context.Context, rel string, want *entry) {
	defer w.wg.Done()
	if ctx.Err() != nil {
		return
	}
	w.sem <- struct{}{}
	defer func() { <-w.sem }()
	f, err := openDir(filepath.Join(w.top, filepath.FromSlash(rel)), want)
	if errors.Is(err, fs.ErrNotExist) && want != nil {
		return // removed since the parent listed it (a build in the box churning temp dirs)
	}
	if err != nil {
		w.fail(fmt.Errorf("list %q: %w", rel, err))
		return
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		w.fail(fmt.Errorf("list %q: %w", rel, err))
		return
	}
	dirfd := int(f.Fd())
	var local []*entry
	var subdirs []*entry
	for _, name := range names {
		p := path.Join(rel, name)
		if rel == "" && name == ".git" && w.topGitSkipped {
			e, err := statAt(dirfd, name, p)
			if err == nil && e.Kind != KindDir {
				local = append(local, e) // a ".git" file (linked worktree): its text matters
			}
			continue // the top-level git dir is walked by gitMeta
		}
		e, err := statAt(dirfd, name, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing: not there now, as in any snapshot
		}
		if err != nil {
			w.fail(err)
			continue
		}
		switch {
		case e.Kind == KindDir && name == ".git":
			e.Flags |= flagNestedGit
			local = append(local, e)
			if rel != "" { // a top-level .git that is not the git dir is only flagged
				w.gitMeta(filepath.Join(w.top, filepath.FromSlash(p)), p, 0)
			}
		case e.Kind == KindDir:
			if isBareRepo(filepath.Join(w.top, filepath.FromSlash(p))) {
				e.Flags |= flagNestedGit
				local = append(local, e)
			}
			subdirs = append(subdirs, e)
		default:
			if name == ".git" {
				e.Flags |= flagNestedGit
			}
			local = append(local, e)
		}
	}
	w.add(local...)
	for _, sd := range subdirs {
		w.wg.Add(1)
		go w.dir(ctx, sd.Path, sd)
	}
}

// errSwapped means a directory changed identity between its parent's listing and its own.
var errSwapped = errors.New("directory replaced during the walk")

// openDir opens a directory without following a symlink in its last component and, when want
// is set, checks it is the same directory (device and inode) the parent listed: a directory
// swapped for a symlink mid-walk (at any depth) cannot lead the walk out of the tree.
func openDir(abs string, want *entry) (*os.File, error) {
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), abs)
	if want != nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || rawOf(&st).ino != want.Ino || rawOf(&st).dev != want.Dev {
			f.Close()
			return nil, errSwapped
		}
	}
	return f, nil
}

// readNames lists a directory's entry names without sorting or stat.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// statAt records what lstat says about name in the open directory dirfd (rel is its path for
// the entry and errors); relative to the directory, the kernel resolves one component only.
func statAt(dirfd int, name, rel string) (*entry, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, fmt.Errorf("lstat %q: %w", rel, err)
	}
	return fromStat(&st, rel), nil
}

func lstatEntry(abs, rel string) (*entry, error) {
	var st unix.Stat_t
	if err := unix.Lstat(abs, &st); err != nil {
		return nil, fmt.Errorf("lstat %q: %w", rel, err)
	}
	return fromStat(&st, rel), nil
}

func fromStat(st *unix.Stat_t, rel string) *entry {
	r := rawOf(st)
	e := &entry{Path: rel, Mode: r.mode, Size: st.Size, Ino: r.ino, Dev: r.dev, Mtime: r.mtime, Ctime: r.ctime}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Kind = KindFile
	case unix.S_IFLNK:
		e.Kind = KindSymlink
	case unix.S_IFDIR:
		e.Kind = KindDir
		e.Size = 0
	default:
		e.Kind = KindSpecial
		e.Size = 0
	}
	return e
}

// isBareRepo reports whether dir looks like a git dir git would open (HEAD, objects/, refs/).
func isBareRepo(dir string) bool {
	st, err := os.Lstat(filepath.Join(dir, "HEAD"))
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	for _, d := range []string{"objects", "refs"} {
		if st, err := os.Lstat(filepath.Join(dir, d)); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// gitMetaWanted reports whether rel (inside a git dir, slash-separated) is metadata that can make
// git run code or change what it shows. Names compare case-insensitively: a case-insensitive
// host resolves ".git/CONFIG" to ".git/config".
func gitMetaWanted(rel string) bool {
	l := strings.ToLower(rel)
	first, rest, _ := strings.Cut(l, "/")
	switch first {
	case "config", "config.worktree", "commondir", "gitdir", "shallow":
		return rest == ""
	case "hooks", "info", "branches", "remotes":
		return true
	case "objects":
		return rest == "info" || strings.HasPrefix(rest, "info/")
	case "refs":
		return rest == "replace" || strings.HasPrefix(rest, "replace/")
	case "worktrees":
		_, inner, _ := strings.Cut(rest, "/")
		return inner == "" || gitMetaWanted(inner)
	}
	return false
}

// gitMetaDirWanted reports whether a directory inside a git dir may hold wanted metadata.
func gitMetaDirWanted(rel string) bool {
	l := strings.ToLower(rel)
	first, rest, _ := strings.Cut(l, "/")
	switch first {
	case "hooks", "info", "branches", "remotes":
		return true
	case "objects":
		return rest == "" || rest == "info" || strings.HasPrefix(rest, "info/")
	case "refs":
		return rest == "" || rest == "replace" || strings.HasPrefix(rest, "replace/")
	case "worktrees":
		_, inner, _ := strings.Cut(rest, "/")
		return inner == "" || gitMetaDirWanted(inner)
	}
	return false
}

// maxInline bounds the git metadata kept inline in the manifest.
const maxInline = 256 << 10

// gitMeta lists the metadata of the git dir at abs under the prefix rel. Submodule git dirs
// under modules/ (at any depth, including nested modules) are walked the same way.
func (w *walker) gitMeta(abs, rel string, depth int) {
	if depth > 32 {
		w.fail(fmt.Errorf("git dir %q: modules nested deeper than 32 levels", rel))
		return
	}
	_ = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == abs {
				return filepath.SkipDir
			}
			w.fail(fmt.Errorf("walk git dir %q: %w", rel, err))
			return nil
		}
		inner, _ := filepath.Rel(abs, p)
		inner = filepath.ToSlash(inner)
		if inner == "." {
			return nil
		}
		if d.IsDir() {
			if strings.EqualFold(inner, "modules") {
				w.modules(p, rel+"/modules", depth)
				return filepath.SkipDir
			}
			if !gitMetaDirWanted(inner) {
				return filepath.SkipDir
			}
			return nil
		}
		if !gitMetaWanted(inner) {
			return nil
		}
		e, err := lstatEntry(p, rel+"/"+inner)
		if err != nil {
			w.fail(err)
			return nil
		}
		e.Flags |= flagGitMeta
		w.add(e)
		return nil
	})
}

// modules finds the git dirs of submodules under a modules/ directory: any directory holding a
// HEAD or config file is one; others are path components of a nested submodule name.
func (w *walker) modules(abs, rel string, depth int) {
	names, err := readNames(abs)
	if err != nil {
		w.fail(fmt.Errorf("list %q: %w", rel, err))
		return
	}
	for _, name := range names {
		p := filepath.Join(abs, name)
		if st, err := os.Lstat(p); err != nil || !st.IsDir() {
			continue
		}
		_, errHead := os.Lstat(filepath.Join(p, "HEAD"))
		_, errConf := os.Lstat(filepath.Join(p, "config"))
		if errHead == nil || errConf == nil {
			w.gitMeta(p, rel+"/"+name, depth+1)
		} else {
			w.modules(p, rel+"/"+name, depth+1)
		}
	}
}
