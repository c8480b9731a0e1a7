package diff

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// keepInMem is the largest file whose bytes are kept after hashing (to write its blob or show
// its text); larger files are hashed by streaming, so memory stays bounded whatever the tree holds.
const keepInMem = 1 << 20

// errChanged means a file changed size while it was read.
var errChanged = errors.New("file changed while being read")

// blobHash is git's object hash of a blob with this content.
func blobHash(data []byte) [20]byte {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	var out [20]byte
	copy(out[:], h.Sum(nil))
	return out
}

// hashEntry sets e.Hash from the file system: the content of a regular file (streamed), or the
// target text of a symlink (never followed). It returns the content when it is at most
// keepInMem bytes and keep is set.
func hashEntry(abs string, e *entry, keep bool) ([]byte, error) {
	switch e.Kind {
	case KindSymlink:
		target, err := os.Readlink(abs)
		if err != nil {
			return nil, fmt.Errorf("read symlink %q: %w", e.Path, err)
		}
		e.Hash, e.Have = blobHash([]byte(target)), true
		return []byte(target), nil
	case KindFile:
	default:
		return nil, nil
	}
	f, err := openVerified(abs, e)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", e.Path, errChanged)
	}
	size := st.Size()
	if size <= keepInMem {
		data := make([]byte, size+1)
		n, err := io.ReadFull(f, data)
		if err != io.ErrUnexpectedEOF || int64(n) != size {
			return nil, fmt.Errorf("read %q: %w", e.Path, errChanged)
		}
		data = data[:n]
		e.Hash, e.Have, e.Size = blobHash(data), true, size
		if keep {
			return data, nil
		}
		return nil, nil
	}
	h := sha1.New()
	h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	buf := make([]byte, 256<<10)
	n, err := io.CopyBuffer(h, io.LimitReader(f, size+1), buf)
	if err != nil || n != size {
		return nil, fmt.Errorf("read %q: %w", e.Path, errChanged)
	}
	copy(e.Hash[:], h.Sum(nil))
	e.Have, e.Size = true, size
	return nil, nil
}

// hashAll hashes every entry for which need returns true, with workers goroutines. An entry that
// cannot be read keeps Have unset and gets ReadErr: the caller reports it rather than stopping,
// so that a box rewriting one file in a loop cannot make the whole review fail.
func hashAll(ctx context.Context, absOf func(*entry) string, es []*entry, workers int, need func(*entry) bool) error {
	jobs := make(chan *entry, 256)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range jobs {
				if _, err := hashEntry(absOf(e), e, false); err != nil {
					e.ReadErr = err.Error()
				}
			}
		}()
	}
	for _, e := range es {
		if ctx.Err() != nil {
			break
		}
		if need(e) {
			jobs <- e
		}
	}
	close(jobs)
	wg.Wait()
	return ctx.Err()
}

// openVerified opens the regular file the walk saw as e: no symlink followed in the last
// component, no blocking on a FIFO, and the same device and inode as the walk recorded, so that
// a directory swapped for a symlink after the walk cannot make it read a file outside the tree.
func openVerified(abs string, e *entry) (*os.File, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscallNoFollow|syscallNonBlock, 0)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", e.Path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
		(e.Ino != 0 && (rawOf(&st).ino != e.Ino || rawOf(&st).dev != e.Dev)) {
		f.Close()
		return nil, fmt.Errorf("open %q: %w", e.Path, errChanged)
	}
	return f, nil
}

// readVerified reads at most limit bytes of the file the walk saw as e (see openVerified).
func readVerified(abs string, e *entry, limit int64) ([]byte, error) {
	f, err := openVerified(abs, e)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
