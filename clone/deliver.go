package clone

// Delivery rules: the box receives the store as a git bundle written by go-git on the host (the
// store's pack file as it is when the store holds exactly one pack, else a pack encoded by
// go-git), streamed over Guest.Exec's stdin into a fixed guest script that runs the box's own
// git: it verifies the bundle, fetches it into a new repository at Dir, sets origin and checks
// out the branch. The host runs no git; values reach the script as positional arguments only,
// each checked for control characters and a leading '-'.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Guest is what clone needs from a running box. Package vm's SSH client provides it.
type Guest interface {
	// Exec runs argv in the box as the box user with stdin streamed in and stdout streamed out,
	// and returns the command's exit status. argv is a vector: each element must reach the
	// program as one argument (over SSH, the implementation quotes each for the remote shell).
	// Stderr is the implementation's to show or log.
	Exec(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (int, error)
}

// DeliverOptions says where and how the box checks the repository out.
type DeliverOptions struct {
	// Dir is the absolute guest path of the new checkout; it must not exist or be empty.
	Dir string
	// Origin is set as the checkout's origin remote (the upstream URL), so that the box can
	// fetch and update submodules itself; "" adds no remote.
	Origin string
	// Branch is the branch checked out; "" means the branch the store's HEAD names.
	Branch string
}

// deliverScript runs in the box: sh -c deliverScript corral-deliver DIR ORIGIN BRANCH.
const deliverScript = `set -eu
dir=$1 origin=$2 branch=$3
if [ -e "$dir" ] && [ -n "$(ls -A -- "$dir")" ]; then
	echo "corral-deliver: $dir exists and is not empty" >&2
	exit 3
fi
mkdir -p -- "$dir"
cd -- "$dir"
git init -q
b=.git/corral-incoming.bundle
cat > "$b"
if ! out=$(git bundle verify -q "$b" 2>&1); then
	printf 'corral-deliver: the bundle does not verify: %s\n' "$out" >&2
	exit 4
fi
git fetch -q --no-tags "$b" '+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*'
rm -f -- "$b"
git checkout -q -b "$branch" "refs/remotes/origin/$branch"
if [ -n "$origin" ]; then
	git remote add origin "$origin"
	git branch -q --set-upstream-to="origin/$branch" "$branch"
fi
`

// DeliverArgv is the guest command Deliver runs, built from checked values.
func DeliverArgv(o DeliverOptions) ([]string, error) {
	if !path.IsAbs(o.Dir) || path.Clean(o.Dir) != o.Dir || hasControl(o.Dir) {
		return nil, fmt.Errorf("deliver: guest dir %q must be a clean absolute path without control characters", o.Dir)
	}
	if o.Origin != "" && (hasControl(o.Origin) || strings.HasPrefix(o.Origin, "-")) {
		return nil, fmt.Errorf("deliver: origin %q has a control character or starts with '-'", o.Origin)
	}
	if why := BranchNameProblem(o.Branch); why != "" {
		return nil, fmt.Errorf("deliver: branch %q: %s", o.Branch, why)
	}
	return []string{"sh", "-c", deliverScript, "corral-deliver", o.Dir, o.Origin, o.Branch}, nil
}

// Deliver streams the store into the box and has the box check it out at o.Dir.
func Deliver(ctx context.Context, g Guest, store string, o DeliverOptions) error {
	s, err := openStore(store)
	if err != nil {
		return err
	}
	if o.Branch == "" {
		head, err := s.Reference(plumbing.HEAD)
		if err != nil || head.Type() != plumbing.SymbolicReference {
			return fmt.Errorf("deliver %s: HEAD names no branch; give one", store)
		}
		o.Branch = head.Target().Short()
	}
	argv, err := DeliverArgv(o)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := WriteBundle(ctx, pw, s, store)
		pw.CloseWithError(err)
		done <- err
	}()
	code, err := g.Exec(ctx, argv, pr, io.Discard)
	pr.CloseWithError(errors.New("guest stopped reading"))
	werr := <-done
	switch {
	case err != nil:
		return fmt.Errorf("deliver %s into the box: %w", store, err)
	case werr != nil:
		return fmt.Errorf("deliver %s into the box: write bundle: %w", store, werr)
	case code != 0:
		return fmt.Errorf("deliver %s into the box: the guest script exited %d (see its message above)", store, code)
	}
	if snap, err := s.Reference(SnapshotRef); err == nil {
		return deliverSnapshot(ctx, g, s, snap.Hash(), o.Dir)
	}
	return nil
}

// snapshotScript runs in the box after delivery: it fetches the snapshot bundle and makes the
// work tree match it, leaving the changes uncommitted as they were on the host.
const snapshotScript = `set -eu
cd -- "$1"
b=.git/corral-snapshot.bundle
cat > "$b"
git fetch -q --no-tags "$b" "+refs/tags/corral-uncommitted:refs/tags/corral-uncommitted"
rm -f -- "$b"
git restore --source=refs/tags/corral-uncommitted --worktree -- .
git tag -d corral-uncommitted >/dev/null
`

// deliverSnapshot sends the snapshot commit and its new objects as a bundle whose prerequisite
// is the snapshot's parent (already in the box).
func deliverSnapshot(ctx context.Context, g Guest, s *filesystem.Storage, snap plumbing.Hash, dir string) error {
	c, err := object.GetCommit(s, snap)
	if err != nil || len(c.ParentHashes) != 1 {
		return fmt.Errorf("deliver snapshot: %s is not a snapshot commit", snap)
	}
	hashes, err := revlist.Objects(s, []plumbing.Hash{snap}, c.ParentHashes)
	if err != nil {
		return fmt.Errorf("deliver snapshot: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# v2 git bundle\n-%s corral base\n%s %s\n\n", c.ParentHashes[0], snap, SnapshotRef)
	if _, err := packfile.NewEncoder(&b, s, false).Encode(hashes, 10); err != nil {
		return fmt.Errorf("deliver snapshot: encode pack: %w", err)
	}
	code, err := g.Exec(ctx, []string{"sh", "-c", snapshotScript, "corral-snapshot", dir}, &b, io.Discard)
	if err != nil {
		return fmt.Errorf("deliver snapshot: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("deliver snapshot: the guest script exited %d", code)
	}
	return nil
}

func openStore(store string) (*filesystem.Storage, error) {
	if fi, err := os.Stat(filepath.Join(store, "objects")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("open store %s: not a repository", store)
	}
	return OpenLocal(store)
}

// WriteBundle writes a v2 git bundle of the store's branches, tags and HEAD to w. dir is the
// store's path, used to reuse its single pack file as it is.
func WriteBundle(ctx context.Context, w io.Writer, s *filesystem.Storage, dir string) error {
	refs, err := bundleRefs(s)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprint(bw, "# v2 git bundle\n")
	for _, r := range refs {
		fmt.Fprintf(bw, "%s %s\n", r.Hash(), r.Name())
	}
	fmt.Fprint(bw, "\n")
	if pack := singlePack(dir); pack != "" {
		f, err := os.Open(pack)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(bw, &capReader{ctx: ctx, r: f, max: 1 << 62}); err != nil {
			return err
		}
		return bw.Flush()
	}
	var tips []plumbing.Hash
	for _, r := range refs {
		tips = append(tips, r.Hash())
	}
	hashes, err := revlist.Objects(s, tips, nil)
	if err != nil {
		return fmt.Errorf("walk objects: %w", err)
	}
	if _, err := packfile.NewEncoder(bw, s, false).Encode(hashes, 10); err != nil {
		return fmt.Errorf("encode pack: %w", err)
	}
	return bw.Flush()
}

// bundleRefs lists HEAD (resolved) and every branch and tag, sorted.
func bundleRefs(s *filesystem.Storage) ([]*plumbing.Reference, error) {
	iter, err := s.IterReferences()
	if err != nil {
		return nil, err
	}
	var refs []*plumbing.Reference
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && wantedRef(r.Name().String()) && r.Name() != SnapshotRef {
			refs = append(refs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, errors.New("store has no branches or tags")
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name() < refs[j].Name() })
	return refs, nil
}

// singlePack returns the store's pack file when it has exactly one, else "". Fetch writes every
// branch and tag into one complete pack; loose objects come only from SnapshotTracked and are
// sent separately; FetchBack adds packs, after which the pack is encoded afresh.
func singlePack(dir string) string {
	packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.pack"))
	if len(packs) == 1 {
		return packs[0]
	}
	return ""
}
