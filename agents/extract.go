package agents

// This file extracts an npm tarball in Go. Rules (each has a row in extract_test.go):
//   - the first path element (npm's "package/") is dropped, as npm does;
//   - a name that is absolute, holds "..", or repeats an earlier entry is refused;
//   - nothing is written through a link: an entry below a name that is a symbolic link (a
//     link made before a directory of the same name, a file under a linked directory) is
//     refused, and a link may not take the name of a directory entries were written under;
//   - a symbolic link must be relative; one that leaves the tree lexically is refused at once,
//     and once every entry is in place every link is resolved against the final tree
//     (links.go), so a chain of links that each look inside but together climb out is
//     refused, naming the entry;
//   - a hard link must name a regular file extracted before it;
//   - devices, FIFOs and every other entry type are refused;
//   - sizes are capped per file, in total and in entry count, counting bytes actually read;
//   - every write goes through an os.Root on the destination, so even a bug here cannot write
//     outside it;
//   - modes are normalised: 0755 when any execute bit is set, else 0644; never setuid.
// Any refusal fails the whole extraction; the caller removes the staging directory.

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// limits caps one extraction.
type limits struct {
	FileBytes  int64
	TotalBytes int64
	Entries    int
}

// defaultLimits fit the largest package measured (Claude Code's native binary, ~230 MB; the
// Node runtime, 185 MB unpacked in 2,700 files) with room to grow.
var defaultLimits = limits{FileBytes: 1 << 30, TotalBytes: 2 << 30, Entries: 100_000}

// extractTarball extracts the gzip tarball at src into the existing empty directory dst.
func extractTarball(src, dst string, lim limits) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("extract %q: %w", src, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("extract %q: %w", src, err)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("extract %q: %w", src, err)
	}
	defer root.Close()
	x := &extractor{root: root, lim: lim, seen: map[string]byte{}, implicit: map[string]bool{}, raw: map[string]string{}}
	if err := x.all(tar.NewReader(zr)); err != nil {
		return fmt.Errorf("extract %q: %w", src, err)
	}
	if err := checkExtracted(dst, x.raw); err != nil {
		return fmt.Errorf("extract %q: %w", src, err)
	}
	return nil
}

// checkExtracted walks the final tree under dst without following anything and resolves every
// link in it against that tree; raw maps a path to its name in the tarball, for errors.
func checkExtracted(dst string, raw map[string]string) error {
	fd, err := openTop(dst)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	files, err := scanFD(fd, false, "")
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrUnsafeArchive)
	}
	for _, f := range files {
		if f.Mode&fs.ModeSymlink == 0 {
			continue
		}
		if err := resolveInside(fd, f.Path); err != nil {
			name, ok := raw[f.Path]
			if !ok {
				name = f.Path
			}
			return fmt.Errorf("entry %q: symbolic link to %q: %w: %w", name, f.Link, err, ErrUnsafeArchive)
		}
	}
	return nil
}

// extractor holds one extraction's running totals.
type extractor struct {
	root     *os.Root
	lim      limits
	total    int64
	seen     map[string]byte   // name → tar type flag, for duplicates and hard links
	implicit map[string]bool   // directories made for entries below them, not (yet) entries
	raw      map[string]string // name → the entry's name in the tarball
}

func (x *extractor) all(tr *tar.Reader) error {
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n >= x.lim.Entries {
			return fmt.Errorf("more than %d entries: %w", x.lim.Entries, ErrUnsafeArchive)
		}
		if err := x.one(h, tr); err != nil {
			return fmt.Errorf("entry %q: %w", h.Name, err)
		}
	}
}

// entryName drops the first element of a tar name and checks what is left.
func entryName(raw string) (string, error) {
	if strings.HasPrefix(raw, "/") || strings.Contains(raw, "\\") || strings.ContainsRune(raw, 0) {
		return "", fmt.Errorf("absolute or odd path: %w", ErrUnsafeArchive)
	}
	for _, el := range strings.Split(raw, "/") {
		if el == ".." {
			return "", fmt.Errorf("path holds \"..\": %w", ErrUnsafeArchive)
		}
	}
	_, rest, ok := strings.Cut(strings.TrimPrefix(path.Clean(raw), "./"), "/")
	if !ok || rest == "" {
		return "", nil // the top directory itself
	}
	return rest, nil
}

func (x *extractor) one(h *tar.Header, r io.Reader) error {
	name, err := entryName(h.Name)
	if err != nil || name == "" {
		return err
	}
	if _, dup := x.seen[name]; dup {
		return fmt.Errorf("appears twice: %w", ErrUnsafeArchive)
	}
	if x.implicit[name] && h.Typeflag != tar.TypeDir {
		return fmt.Errorf("is a directory earlier entries were written under, and may not become a %s: %w", typeName(h.Typeflag), ErrUnsafeArchive)
	}
	if err := x.parents(name); err != nil {
		return err
	}
	x.seen[name], x.raw[name] = h.Typeflag, h.Name
	switch h.Typeflag {
	case tar.TypeDir:
		return x.root.MkdirAll(name, 0o755)
	case tar.TypeReg: // the reader turns the old TypeRegA into TypeReg
		return x.file(name, h, r)
	case tar.TypeSymlink:
		if err := linkInside(name, h.Linkname); err != nil {
			return err
		}
		return x.root.Symlink(h.Linkname, name)
	case tar.TypeLink:
		target, err := entryName(h.Linkname)
		if err != nil || x.seen[target] != tar.TypeReg {
			return fmt.Errorf("hard link to %q, not a file extracted before it: %w", h.Linkname, ErrUnsafeArchive)
		}
		return x.root.Link(target, name)
	}
	return fmt.Errorf("entry type %q (device, FIFO or other) is refused: %w", string(h.Typeflag), ErrUnsafeArchive)
}

// parents creates the directories above name (tarballs often omit them), refusing to write
// below a name that is not a directory entry.
func (x *extractor) parents(name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	for p := dir; p != "."; p = path.Dir(p) {
		if t, ok := x.seen[p]; ok && t != tar.TypeDir {
			return fmt.Errorf("is below %q, a %s: nothing is written through a link or into a file: %w", p, typeName(t), ErrUnsafeArchive)
		}
		if _, ok := x.seen[p]; !ok {
			x.implicit[p] = true
		}
	}
	return x.root.MkdirAll(dir, 0o755)
}

// typeName names a tar entry type for error messages.
func typeName(t byte) string {
	switch t {
	case tar.TypeDir:
		return "directory"
	case tar.TypeReg:
		return "regular file"
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	}
	return fmt.Sprintf("entry of type %q", string(t))
}

// linkInside refuses a symbolic link target that is absolute or leaves the tree.
func linkInside(name, target string) error {
	if target == "" || path.IsAbs(target) {
		return fmt.Errorf("symbolic link to %q: absolute: %w", target, ErrUnsafeArchive)
	}
	joined := path.Join(path.Dir(name), target)
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return fmt.Errorf("symbolic link to %q leaves the package: %w", target, ErrUnsafeArchive)
	}
	return nil
}

func (x *extractor) file(name string, h *tar.Header, r io.Reader) error {
	if h.Size > x.lim.FileBytes {
		return fmt.Errorf("%d bytes, more than the %d a file may hold: %w", h.Size, x.lim.FileBytes, ErrUnsafeArchive)
	}
	if x.total+h.Size > x.lim.TotalBytes {
		return fmt.Errorf("the package holds more than %d bytes: %w", x.lim.TotalBytes, ErrUnsafeArchive)
	}
	mode := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, h.Size))
	x.total += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != h.Size {
		err = fmt.Errorf("short entry: %d of %d bytes", n, h.Size)
	}
	return err
}
