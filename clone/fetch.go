package clone

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Options configures Fetch. The zero value is usable.
type Options struct {
	// Limits are the caps; zero fields take DefaultLimits.
	Limits Limits
	// HTTPClient is the base client for https sources (its TLS roots and proxy); nil means
	// net/http's default transport. Fetch copies it and caps response bodies.
	HTTPClient *http.Client
	// Auth is passed to the transport; nil means none for https and the SSH agent for ssh.
	Auth transport.AuthMethod
	// Cwd resolves a relative local path; "" means the process's working directory.
	Cwd string
}

// Ref is one ref written into a store.
type Ref struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
}

// Result is what Fetch wrote.
type Result struct {
	// Store is the bare repository's path.
	Store string `json:"store"`
	// Source is the accepted source.
	Source Source `json:"source"`
	// Head is the branch the store's HEAD names, or "" when detached.
	Head string `json:"head"`
	// Refs are the branches and tags, sorted by name.
	Refs []Ref `json:"refs"`
	// Warnings are flagged findings that did not refuse the fetch.
	Warnings []Finding `json:"warnings"`
}

// ErrStoreExists is returned when the store path is already taken.
var ErrStoreExists = errors.New("clone store already exists")

// Fetch copies the repository at rawURL into a new bare store at store (which must not exist)
// under the source rules, the limits and the validation rules of this package. On any error
// nothing is left at store or beside it.
func Fetch(ctx context.Context, rawURL, store string, opts Options) (*Result, error) {
	src, err := ParseSource(rawURL, opts.Cwd)
	if err != nil {
		return nil, err
	}
	l := opts.Limits
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(store); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrStoreExists, store)
	}
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	tmp, err := stageDir(store)
	if err != nil {
		return nil, err
	}
	res, err := fetchInto(ctx, src, tmp, l, opts)
	if err == nil {
		err = finishStage(ctx, tmp, store)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, timeoutAsLimit(ctx, err, l)
	}
	res.Store = store
	return res, nil
}

// stageDir creates the private temporary directory a store is built in, beside its final path.
func stageDir(store string) (string, error) {
	parent := filepath.Dir(store)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(store)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("create staging dir for %s: %w", store, err)
	}
	return tmp, nil
}

// finishStage moves the finished store into place, unless the deadline passed meanwhile.
func finishStage(ctx context.Context, tmp, store string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp, store); err != nil {
		return fmt.Errorf("move store into place at %s: %w", store, err)
	}
	return nil
}

func timeoutAsLimit(ctx context.Context, err error, l Limits) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return limitError("took longer than %s (%v)", l.Timeout, err)
	}
	return err
}

// newStore initialises a bare, hook-free repository in dir: objects, refs and a config that says
// only core.bare = true. Nothing else is ever written into it from the source.
func newStore(dir string) (*filesystem.Storage, error) {
	s := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(), filesystem.Options{ExclusiveAccess: true})
	if err := s.Init(); err != nil {
		return nil, fmt.Errorf("init store %s: %w", dir, err)
	}
	cfg := config.NewConfig()
	cfg.Core.IsBare = true
	if err := s.SetConfig(cfg); err != nil {
		return nil, fmt.Errorf("init store %s: %w", dir, err)
	}
	return s, nil
}

// fetchInto transfers, validates and writes refs into the staging dir.
func fetchInto(ctx context.Context, src Source, dir string, l Limits, opts Options) (*Result, error) {
	s, err := newStore(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "incoming-*.pack")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fs := &findings{}
	var w *wanted
	if src.Kind == KindLocal {
		w, err = transferLocal(ctx, src, s, f, l, fs)
	} else {
		w, err = transferRemote(ctx, src, s, f, l, opts, fs)
	}
	if err != nil {
		return nil, err
	}
	c := newChecker(s, l)
	if err := validateStore(ctx, c, w); err != nil {
		return nil, err
	}
	res := &Result{Source: src, Warnings: c.warnings}
	return res, writeRefs(s, w, res)
}

// validateStore runs every check on the staged objects and the refs about to be written.
func validateStore(ctx context.Context, c *checker, w *wanted) error {
	for name, h := range w.refs {
		if _, err := c.s.EncodedObject(plumbing.AnyObject, h); err != nil {
			c.refuse(Finding{Class: ClassRef, Path: name.String(), Object: h.String(), Reason: "its object was not sent"})
		}
	}
	if err := c.checkTrees(ctx); err != nil {
		return err
	}
	if err := c.checkCommits(ctx); err != nil {
		return err
	}
	return c.err()
}

// writeRefs writes the branches, tags and HEAD into the store and lists them in res.
func writeRefs(s *filesystem.Storage, w *wanted, res *Result) error {
	for name, h := range w.refs {
		if err := s.SetReference(plumbing.NewHashReference(name, h)); err != nil {
			return fmt.Errorf("write ref %s: %w", name, err)
		}
		res.Refs = append(res.Refs, Ref{Name: name.String(), Hash: h.String()})
	}
	sort.Slice(res.Refs, func(i, j int) bool { return res.Refs[i].Name < res.Refs[j].Name })
	head := pickHead(w)
	if head != "" {
		res.Head = head.String()
		return s.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, head))
	}
	if !w.headHash.IsZero() {
		if _, err := object.GetCommit(s, w.headHash); err == nil {
			return s.SetReference(plumbing.NewHashReference(plumbing.HEAD, w.headHash))
		}
	}
	return errors.New("write HEAD: the source has no branch to check out")
}

// pickHead is the branch HEAD should name: the source's, else the branch at the source's HEAD
// commit, else main or master, else the first branch.
func pickHead(w *wanted) plumbing.ReferenceName {
	if _, ok := w.refs[w.head]; ok && w.head.IsBranch() {
		return w.head
	}
	var branches []plumbing.ReferenceName
	for name := range w.refs {
		if name.IsBranch() {
			branches = append(branches, name)
		}
	}
	sort.Slice(branches, func(i, j int) bool { return branches[i] < branches[j] })
	for _, b := range branches {
		if w.refs[b] == w.headHash {
			return b
		}
	}
	for _, b := range []plumbing.ReferenceName{"refs/heads/main", "refs/heads/master"} {
		if _, ok := w.refs[b]; ok {
			return b
		}
	}
	if len(branches) > 0 {
		return branches[0]
	}
	return ""
}
