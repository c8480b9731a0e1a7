package clone

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNoFile is returned by HeadFile when HEAD's tree has no regular file at that path.
var ErrNoFile = errors.New("no such file at HEAD")

// HeadFile reads the regular file name (e.g. ".corral.toml") from the store's HEAD tree, at most
// max bytes, so that policy can load a clone-mode repository's configuration without a work
// tree. The content is untrusted: policy applies the same trust classes as in mount mode. A
// symlink at that path is not followed (ErrNoFile).
func HeadFile(store, name string, max int64) ([]byte, error) {
	s, err := openStore(store)
	if err != nil {
		return nil, err
	}
	head, err := storeHead(s)
	if err != nil {
		return nil, err
	}
	tree, err := head.Tree()
	if err != nil {
		return nil, err
	}
	e, err := tree.FindEntry(name)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || (err == nil && !e.Mode.IsFile()) {
		return nil, fmt.Errorf("%w: %s", ErrNoFile, name)
	}
	if err != nil {
		return nil, err
	}
	if e.Mode == filemode.Symlink {
		return nil, fmt.Errorf("%w: %s is a symlink", ErrNoFile, name)
	}
	o, err := s.EncodedObject(plumbing.BlobObject, e.Hash)
	if err != nil {
		return nil, err
	}
	if o.Size() > max {
		return nil, fmt.Errorf("read %s at HEAD: %d bytes, more than %d", name, o.Size(), max)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, max))
}
