package diff

// The session-base store keeps a box's session bases under $CORRAL_HOME/sessions/<box>/, never in
// the repository, because a base copies ignored files (.env, .envrc) and a ref or object of the
// repository would hand them to every push --mirror, backup or fetch. Its rules:
//
//   - <stamp>.base is the trusted manifest (manifest.go); <stamp>.blobs lists, one hex id a line,
//     the blobs of that base kept in objects/.
//   - objects/<2 hex>/<38 hex> holds the raw bytes of a blob the repository lacked when the base
//     was recorded (untracked, ignored or modified files up to 1 MiB), named by its git blob id,
//     the id the manifest records and Compare trusts. Bytes are verified against it on every
//     read, so a damaged blob is reported, never shown as the base.
//   - Directories are 0700 and files 0600; every file is written to a temporary name and renamed.
//   - A box keeps its newest keepBases bases; a blob no kept list names is removed once it is an
//     hour old (a record running at the same time may not have written its list yet). PruneBox
//     removes all of a box's bases.

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/atomicfile"
)

// keepBases is how many session bases a box keeps. Compare reads only the newest; the others
// survive a start that went wrong. Each may hold copies of ignored files, so the number is small.
const keepBases = 5

// sweepGrace is how old an unlisted blob must be before it is removed.
const sweepGrace = time.Hour

// store is one box's session-base directory.
type store struct{ dir string }

func openStore(homeDir, box string) store {
	return store{dir: home.Home{Dir: homeDir}.SessionBases(box)}
}

func (s store) objects() string { return filepath.Join(s.dir, "objects") }

// blobPath is where the blob with git id h lives.
func (s store) blobPath(h [20]byte) string {
	x := hex.EncodeToString(h[:])
	return filepath.Join(s.objects(), x[:2], x[2:])
}

// mkdir creates dir (under the store) with owner-only permissions, refusing a symlink in its place.
func (s store) mkdir(dir string) error {
	if err := (home.Home{Dir: s.dir}).MkdirAll(dir); err != nil {
		return fmt.Errorf("session base store: %w", err)
	}
	return nil
}

// putBlob stores data under its id h unless a blob of that size is already there, in which case
// it is touched so that a concurrent sweep leaves it alone.
func (s store) putBlob(h [20]byte, data []byte) error {
	p := s.blobPath(h)
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		now := time.Now()
		return os.Chtimes(p, now, now)
	}
	if err := s.mkdir(filepath.Dir(p)); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("store blob %s: %w", filepath.Base(p), err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store blob %q: %w", p, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store blob %q: %w", p, err)
	}
	return nil
}

// errNotStored means the store has no blob of that id.
var errNotStored = errors.New("not in the session base store")

// blob reads the blob with id h, at most limit bytes, and verifies it. It returns errNotStored
// when there is none, and an error naming the mismatch when the bytes are not h's.
func (s store) blob(h [20]byte, limit int64) ([]byte, error) {
	f, err := os.Open(s.blobPath(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNotStored
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	if blobHash(data) != h {
		return nil, errors.New("failed verification: the stored copy does not match its recorded hash")
	}
	return data, nil
}

// writeList records which stored blobs the base named stamp uses.
func (s store) writeList(stamp string, ids [][20]byte) error {
	var b bytes.Buffer
	for _, h := range ids {
		b.WriteString(hex.EncodeToString(h[:]))
		b.WriteByte('\n')
	}
	p := filepath.Join(s.dir, stamp+".blobs")
	if err := atomicfile.Write(p, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write session base list: %w", err)
	}
	return nil
}

// prune keeps the newest keep bases (by stamp, counting a list without its manifest, left by a
// record still running or one that failed) and then sweeps the blobs no kept list names.
func (s store) prune(keep int) error {
	names, err := readNames(s.dir)
	if err != nil {
		return fmt.Errorf("list session bases %q: %w", s.dir, err)
	}
	stamps := map[string]bool{}
	for _, n := range names {
		if st, ok := baseStamp(n); ok {
			stamps[st] = true
		}
	}
	sorted := make([]string, 0, len(stamps))
	for st := range stamps {
		sorted = append(sorted, st)
	}
	sort.Strings(sorted)
	for len(sorted) > keep {
		for _, ext := range []string{".base", ".blobs"} {
			if err := os.Remove(filepath.Join(s.dir, sorted[0]+ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("prune session base: %w", err)
			}
		}
		sorted = sorted[1:]
	}
	return s.sweep(sorted)
}

// baseStamp returns the stamp of a manifest or list file name.
func baseStamp(name string) (string, bool) {
	if strings.HasPrefix(name, ".") {
		return "", false
	}
	for _, ext := range []string{".base", ".blobs"} {
		if st, ok := strings.CutSuffix(name, ext); ok {
			return st, true
		}
	}
	return "", false
}

// sweep removes the blobs (and temporary files) older than sweepGrace that no kept list names.
func (s store) sweep(kept []string) error {
	live := map[string]bool{}
	for _, st := range kept {
		if err := readList(filepath.Join(s.dir, st+".blobs"), live); err != nil {
			return err
		}
	}
	fans, err := readNames(s.objects())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweep session base store: %w", err)
	}
	old := time.Now().Add(-sweepGrace)
	for _, fan := range fans {
		dir := filepath.Join(s.objects(), fan)
		names, err := readNames(dir)
		if err != nil {
			continue // not a directory
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			if live[fan+n] {
				continue
			}
			if fi, err := os.Lstat(p); err == nil && fi.ModTime().Before(old) {
				if err := os.Remove(p); err != nil {
					return fmt.Errorf("sweep session base store: %w", err)
				}
			}
		}
	}
	return nil
}

// readList adds the ids of a .blobs file to live; a missing list names nothing.
func readList(p string, live map[string]bool) error {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read session base list %q: %w", p, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		live[sc.Text()] = true
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read session base list %q: %w", p, err)
	}
	return nil
}

// PruneBox removes every session base of box from h: manifests, lists and stored blobs (copies
// of ignored files among them). git corral delete calls it once the box is gone. A box with no
// bases is not an error.
func PruneBox(h home.Home, box string) error {
	if !validBox.MatchString(box) {
		return fmt.Errorf("prune session bases: invalid box name %q", box)
	}
	dir := h.SessionBases(box)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("prune session bases of box %s: %w", box, err)
	}
	return nil
}
