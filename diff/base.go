package diff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/gitcli"
	"github.com/git-corral/git-corral/internal/lazyre"
	"github.com/git-corral/git-corral/project"
)

// BaseOptions tunes RecordBaseWith and Record. The zero value is usable.
type BaseOptions struct {
	// Home is the state directory ($CORRAL_HOME); empty resolves it from the environment.
	Home string
	// Workers bounds parallel hashing; 0 means the number of CPUs.
	Workers int
	// Now gives the base's time; nil means time.Now.
	Now func() time.Time
}

// validBox is what a box name may hold (project.BoxName makes them so); it keeps the store's
// paths free of separators.
var validBox = lazyre.New(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Recorded is what Record did.
type Recorded struct {
	// Path is the base's trusted manifest, $CORRAL_HOME/sessions/<box>/<timestamp>.base.
	Path string
	// Notice, when not empty, says what Record removed from the repository (the session bases
	// older versions kept under refs/corral/sessions/); the caller prints it.
	Notice string
}

// Record records the work tree's state as a session base for box (see RecordBaseWith), then
// removes the refs older versions left under refs/corral/sessions/ and says so in the notice.
func Record(ctx context.Context, p *project.Project, box string, o BaseOptions) (Recorded, error) {
	rec, written, err := RecordStart(ctx, p, box, o)
	if err != nil {
		return Recorded{}, err
	}
	return rec, written()
}

// RecordStart is Record with the base's list and manifest written in the background, which a
// session needs only once it ends: when it returns, the work tree's state is read and the bytes
// the base keeps are in the store, so what the base records no longer depends on what happens
// to the tree; written waits for the files (each fsynced, in rec.Path) and returns their error.
func RecordStart(ctx context.Context, p *project.Project, box string, o BaseOptions) (rec Recorded, written func() error, err error) {
	path, save, err := captureBase(ctx, p, box, o)
	if err != nil {
		return Recorded{}, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- save() }()
	return Recorded{Path: path, Notice: removeLegacyRefs(ctx, p)}, sync.OnceValue(func() error { return <-done }), nil
}

// RecordBase records the work tree's state as a session base for box and returns the path of
// its manifest.
func RecordBase(ctx context.Context, p *project.Project, box string) (string, error) {
	return RecordBaseWith(ctx, p, box, BaseOptions{})
}

// RecordBaseWith records the work tree's state as a session base for box under
// $CORRAL_HOME/sessions/<box>/: the trusted manifest of every path (tracked, untracked and
// ignored files with their lstat fields and blob hash, git metadata inline) and, in the store,
// the bytes of every file up to 1 MiB the repository lacks, outside ignored directories. It
// writes nothing into the repository (no ref, no object, no index, no HEAD) and never runs a
// filter, hook or any other repository-defined program. It keeps the newest keepBases bases of
// the box and returns the new manifest's path. It leaves refs of older versions alone (Record
// removes them).
func RecordBaseWith(ctx context.Context, p *project.Project, box string, o BaseOptions) (string, error) {
	path, save, err := captureBase(ctx, p, box, o)
	if err != nil {
		return "", err
	}
	return path, save()
}

// captureBase reads the work tree's state for a base of box and keeps the bytes it needs in
// the store; save writes the base's list and manifest (at path) and prunes older bases.
func captureBase(ctx context.Context, p *project.Project, box string, o BaseOptions) (path string, save func() error, err error) {
	if p == nil {
		return "", nil, fmt.Errorf("record session base: no project")
	}
	if !validBox.MatchString(box) {
		return "", nil, fmt.Errorf("record session base: invalid box name %q", box)
	}
	o, err = o.fill()
	if err != nil {
		return "", nil, err
	}
	es, err := walk(ctx, p.TopLevel, p.CommonDir, o.Workers)
	if err != nil {
		return "", nil, fmt.Errorf("record session base: %w", err)
	}
	if err := hashAll(ctx, func(e *entry) string { return entryAbs(p, e) }, es, o.Workers, func(*entry) bool { return true }); err != nil {
		return "", nil, err
	}
	st := openStore(o.Home, box)
	ids, err := keepBlobs(ctx, p, st, es)
	if err != nil {
		return "", nil, err
	}
	inlineGitMeta(p, es)
	now := o.Now()
	m := &manifest{manifestHeader: manifestHeader{Box: box, TopLevel: p.TopLevel, Created: now}, Entries: es}
	return manifestPath(st, m), func() error {
		if err := st.writeList(stamp(now), ids); err != nil {
			return err
		}
		if _, err := saveManifest(st, m); err != nil {
			return err
		}
		return st.prune(keepBases)
	}, nil
}

// keepBlobs opens p's repository to read only, and keeps in st the bytes of the walked files it
// lacks (storeBlobs), outside the directories git ignores.
func keepBlobs(ctx context.Context, p *project.Project, st store, es []*entry) ([][20]byte, error) {
	repo, err := git.PlainOpenWithOptions(p.TopLevel, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("record session base: open repository %q: %w", p.TopLevel, err)
	}
	if err := st.mkdir(st.dir); err != nil {
		return nil, err
	}
	skip := func() ([]string, error) {
		dirs, err := ignoredDirs(ctx, p.TopLevel)
		if err != nil {
			return nil, fmt.Errorf("record session base: %w", err)
		}
		return dirs, nil
	}
	return storeBlobs(func(e *entry) string { return entryAbs(p, e) }, repo.Storer, st, es, skip)
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

// storable reports whether a walked entry's bytes may be kept as a blob: a readable file or
// symlink outside git metadata, and no ".git" path component in any case (what git itself
// would refuse to hold).
func storable(e *entry) bool {
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

// storeBlobs keeps in st the bytes of every storable entry the repository lacks, read now
// (re-hashed: the file may have changed since the walk), and returns their ids. The repository
// is only read. Files over keepInMem and those in the directories skip lists (asked once, at
// the first file that would be kept: a git process, which a session whose files the
// repository all has, the usual case, does without) are recorded by hash only.
func storeBlobs(absOf func(*entry) string, repo storer.EncodedObjectStorer, st store, es []*entry, skip func() ([]string, error)) ([][20]byte, error) {
	var ids [][20]byte
	var dirs []string
	asked := false
	for _, e := range es {
		if !storable(e) || repo.HasEncodedObject(plumbing.Hash(e.Hash)) == nil || e.Size > keepInMem {
			continue
		}
		if !asked {
			var err error
			if dirs, err = skip(); err != nil {
				return nil, err
			}
			asked = true
		}
		if underAny(e.Path, dirs) {
			continue // an ignored directory (node_modules, target/…): manifest only
		}
		data, err := hashEntry(absOf(e), e, true)
		if err != nil {
			e.Have, e.ReadErr = false, err.Error()
			continue
		}
		if err := st.putBlob(e.Hash, data); err != nil {
			return nil, fmt.Errorf("record session base: keep the bytes of %q: %w", e.Path, err)
		}
		e.Flags |= flagStored
		ids = append(ids, e.Hash)
	}
	return ids, nil
}

// ignoredDirs lists the directories git ignores in the work tree (node_modules/, target/…),
// whose files go into the manifest but not into the store, so that a session base does not copy
// a dependency tree. Single ignored files (.envrc, .env) are still kept. Only what is kept
// depends on ignore rules, never what is compared.
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
