package clone

// Fetch-back rules: the box's branches come back as a bundle made by the box's own git
// ("git bundle create - --branches"), read on the host with go-git as hostile data:
//   - framing: "# v2 git bundle" (or v3 with only @object-format=sha1), at most maxBundleRefs ref
//     lines of at most maxBundleLine bytes, no prerequisites (only complete bundles);
//   - every ref name passes RefNameProblem; only refs/heads/* are taken;
//   - the pack goes through the same caps and the same tree, .gitmodules and shape checks as a
//     fetch, in a staging repository; only then are its pack files moved into the host
//     repository and refs/corral/<box>/<branch> set (stale ones removed). Nothing is checked out.

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/git-corral/git-corral/internal/lazyre"
)

const (
	maxBundleRefs = 10000
	maxBundleLine = 4096
)

// FetchBackOptions says which guest checkout to read and where its branches land.
type FetchBackOptions struct {
	// Dir is the guest checkout (as given to Deliver).
	Dir string
	// Box names the refs: refs/corral/<Box>/<branch>.
	Box string
	// Limits cap the bundle; zero fields take DefaultLimits.
	Limits Limits
}

// FetchBackResult lists what FetchBack wrote.
type FetchBackResult struct {
	// Refs are the refs/corral/<box>/… refs set, sorted.
	Refs []Ref `json:"refs"`
	// Removed are refs/corral/<box>/… refs deleted because the branch is gone from the box.
	Removed []string `json:"removed"`
	// Warnings are flagged findings that did not refuse the fetch.
	Warnings []Finding `json:"warnings"`
}

var boxName = lazyre.New(`^[a-z0-9][a-z0-9-]{0,62}$`)

// FetchBackArgv is the guest command FetchBack runs.
func FetchBackArgv(dir string) []string {
	return []string{"sh", "-c", `set -eu; cd -- "$1"; exec git bundle create -q - --branches`, "corral-fetch", dir}
}

// FetchBack brings the box's branches into refs/corral/<box>/… of the host repository whose
// (common) git dir is gitDir.
func FetchBack(ctx context.Context, g Guest, gitDir string, o FetchBackOptions) (*FetchBackResult, error) {
	if !boxName.MatchString(o.Box) {
		return nil, fmt.Errorf("fetch back: box name %q is not [a-z0-9-]", o.Box)
	}
	if _, err := DeliverArgv(DeliverOptions{Dir: o.Dir, Branch: "main"}); err != nil {
		return nil, fmt.Errorf("fetch back: %w", err)
	}
	l := o.Limits
	if err := l.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	tmp, err := os.MkdirTemp(gitDir, "corral-fetch-")
	if err != nil {
		return nil, fmt.Errorf("fetch back into %s: %w", gitDir, err)
	}
	defer os.RemoveAll(tmp)
	heads, warnings, err := receiveBundle(ctx, g, o, tmp, l)
	if err != nil {
		return nil, timeoutAsLimit(ctx, err, l)
	}
	res := &FetchBackResult{Warnings: warnings}
	return res, installFetched(gitDir, tmp, o.Box, heads, res)
}

// receiveBundle runs the guest command and stages, scans and validates what it sends.
func receiveBundle(ctx context.Context, g Guest, o FetchBackOptions, tmp string, l Limits) (map[string]plumbing.Hash, []Finding, error) {
	s, err := newStore(filepath.Join(tmp, "stage"))
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Create(filepath.Join(tmp, "incoming.pack"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := g.Exec(ctx, FetchBackArgv(o.Dir), nil, pw)
		pw.Close()
		done <- result{code, err}
	}()
	heads, perr := readBundle(ctx, pr, s, f, l)
	pr.CloseWithError(errors.New("host stopped reading"))
	r := <-done
	switch {
	case perr != nil:
		return nil, nil, perr
	case r.err != nil:
		return nil, nil, fmt.Errorf("fetch back from the box: %w", r.err)
	case r.code != 0:
		return nil, nil, fmt.Errorf("fetch back from the box: git bundle exited %d in %s", r.code, o.Dir)
	}
	c := newChecker(s, l)
	w := &wanted{refs: map[plumbing.ReferenceName]plumbing.Hash{}}
	for name, h := range heads {
		w.refs[plumbing.ReferenceName("refs/heads/"+name)] = h
	}
	if err := validateStore(ctx, c, w); err != nil {
		return nil, nil, err
	}
	return heads, c.warnings, nil
}

// readBundle parses the bundle header and runs its pack through the pack pipeline into s. It
// returns the branches by short name.
func readBundle(ctx context.Context, r io.Reader, s storer.Storer, f *os.File, l Limits) (map[string]plumbing.Hash, error) {
	br := bufio.NewReaderSize(&capReader{ctx: ctx, r: r, max: l.MaxPackBytes + maxBundleRefs*maxBundleLine, shown: l.MaxPackBytes}, 1<<16)
	heads, err := readBundleHeader(br)
	if err != nil {
		return nil, err
	}
	if len(heads) == 0 {
		return nil, errors.New("fetch back: the box has no branches")
	}
	return heads, receiveScanStore(ctx, br, s, f, l)
}

func bundleRefused(reason string, ref string) error {
	return &RefusedError{Findings: []Finding{{Class: ClassBundle, Path: ref, Reason: reason}}}
}

// readBundleHeader reads the signature, capabilities and ref lines up to the blank line.
func readBundleHeader(br *bufio.Reader) (map[string]plumbing.Hash, error) {
	heads := map[string]plumbing.Hash{}
	fs := &findings{}
	for i := 0; ; i++ {
		line, err := br.ReadSlice('\n')
		if err != nil || len(line) > maxBundleLine {
			return nil, bundleRefused("header line missing, unterminated or too long", "")
		}
		text := strings.TrimSuffix(string(line), "\n")
		switch {
		case i == 0:
			if text != "# v2 git bundle" && text != "# v3 git bundle" {
				return nil, bundleRefused(fmt.Sprintf("signature %q is not a v2/v3 git bundle", text), "")
			}
			continue
		case i > maxBundleRefs:
			return nil, bundleRefused(fmt.Sprintf("more than %d header lines", maxBundleRefs), "")
		case text == "":
			return heads, fs.err()
		case strings.HasPrefix(text, "@"):
			if text != "@object-format=sha1" {
				return nil, bundleRefused(fmt.Sprintf("capability %q is not accepted", text), "")
			}
			continue
		case strings.HasPrefix(text, "-"):
			return nil, bundleRefused("the bundle has prerequisites; only complete bundles are accepted", "")
		}
		hex, name, ok := strings.Cut(text, " ")
		if !ok || !plumbing.IsHash(hex) {
			return nil, bundleRefused("malformed ref line", text)
		}
		if !strings.HasPrefix(name, "refs/heads/") {
			continue
		}
		// A head comes back as refs/corral/<box>/<branch> and is shown and passed to git by its
		// branch name, so the branch name's own rules apply too (a name starting with '-').
		branch := strings.TrimPrefix(name, "refs/heads/")
		if why := cmp.Or(RefNameProblem(name), BranchNameProblem(branch)); why != "" {
			fs.refuse(Finding{Class: ClassRef, Path: name, Reason: why})
			continue
		}
		heads[branch] = plumbing.NewHash(hex)
	}
}

// installFetched moves the staged pack files into gitDir and sets refs/corral/<box>/….
func installFetched(gitDir, tmp, box string, heads map[string]plumbing.Hash, res *FetchBackResult) error {
	packs, err := filepath.Glob(filepath.Join(tmp, "stage", "objects", "pack", "pack-*"))
	if err != nil {
		return err
	}
	sort.Slice(packs, func(i, j int) bool {
		return strings.HasSuffix(packs[i], ".pack") && !strings.HasSuffix(packs[j], ".pack")
	})
	dst := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, p := range packs { // the .pack before its .idx: readers look for the .idx
		if err := os.Rename(p, filepath.Join(dst, filepath.Base(p))); err != nil {
			return fmt.Errorf("install fetched pack: %w", err)
		}
	}
	// The host repository is trusted (the store, or the user's own checkout): plain storage.
	host := filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRUDefault())
	return setCorralRefs(host, box, heads, res)
}

// setCorralRefs makes refs/corral/<box>/ hold exactly heads.
func setCorralRefs(s storer.ReferenceStorer, box string, heads map[string]plumbing.Hash, res *FetchBackResult) error {
	prefix := "refs/corral/" + box + "/"
	iter, err := s.IterReferences()
	if err != nil {
		return err
	}
	var stale []plumbing.ReferenceName
	iter.ForEach(func(r *plumbing.Reference) error {
		if n := r.Name().String(); strings.HasPrefix(n, prefix) {
			if _, keep := heads[strings.TrimPrefix(n, prefix)]; !keep {
				stale = append(stale, r.Name())
			}
		}
		return nil
	})
	for name, h := range heads {
		ref := plumbing.NewHashReference(plumbing.ReferenceName(prefix+name), h)
		if err := s.SetReference(ref); err != nil {
			return fmt.Errorf("set %s: %w", ref.Name(), err)
		}
		res.Refs = append(res.Refs, Ref{Name: ref.Name().String(), Hash: h.String()})
	}
	for _, name := range stale {
		if err := s.RemoveReference(name); err != nil {
			return fmt.Errorf("remove %s: %w", name, err)
		}
		res.Removed = append(res.Removed, name.String())
	}
	sort.Slice(res.Refs, func(i, j int) bool { return res.Refs[i].Name < res.Refs[j].Name })
	sort.Strings(res.Removed)
	return nil
}
