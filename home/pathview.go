package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// view is one path as the mount guard compares it: its absolute spelling with every symlink of
// its existing part resolved, and the identities (device and inode) of what exists of it, so
// that a bind mount, a hard link or another spelling of one directory is still the same place.
type view struct {
	clean string        // absolute, cleaned, symlinks of the existing prefix resolved
	key   string        // clean, case-folded when the comparison is case-insensitive
	self  os.FileInfo   // nil when the path does not exist
	above []os.FileInfo // the existing strict ancestors, nearest first
}

// danglingError is a candidate path that runs through a symlink whose target is missing: what
// Lima would mount then depends on what is created there later.
type danglingError struct{ link string }

func (e *danglingError) Error() string {
	return fmt.Sprintf("symlink %q: target does not exist", e.link)
}

// checkText refuses a path that no mount may carry: empty, relative, or holding a NUL or a line
// break (which Lima's YAML and the guest's mount table would read as two things).
func checkText(p string) error {
	switch {
	case p == "":
		return errors.New("is empty")
	case strings.ContainsAny(p, "\x00\n\r"):
		return errors.New("contains a NUL or a line break")
	}
	return nil
}

// resolvePath makes p absolute and clean and resolves the symlinks of its longest existing
// prefix; the missing rest is kept as spelled. With strict, a dangling symlink or any error other
// than "does not exist" fails; without it (a trusted place), the lexical spelling is kept.
func resolvePath(p string, strict bool) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	head, rest := abs, ""
	for {
		real, err := filepath.EvalSymlinks(head)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			if strict {
				return "", err
			}
			return abs, nil
		}
		if fi, lerr := os.Lstat(head); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if strict {
				return "", &danglingError{link: head}
			}
			return abs, nil
		}
		parent := filepath.Dir(head)
		if parent == head {
			return abs, nil
		}
		head, rest = parent, filepath.Join(filepath.Base(head), rest)
	}
}

// newView resolves p and stats what exists of it. fold compares spellings case-insensitively.
func newView(p string, strict, fold bool) (view, error) {
	clean, err := resolvePath(p, strict)
	if err != nil {
		return view{}, err
	}
	v := view{clean: clean, key: clean}
	if fold {
		v.key = foldPath(clean)
	}
	v.self, _ = os.Stat(clean)
	for d := clean; ; {
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
		if fi, err := os.Stat(d); err == nil {
			v.above = append(v.above, fi)
		}
	}
	return v, nil
}

// same reports whether two existing files are one.
func same(a, b os.FileInfo) bool { return a != nil && b != nil && os.SameFile(a, b) }

// is reports whether v and t are the same place.
func (v view) is(t view) bool { return v.key == t.key || same(v.self, t.self) }

// inside reports whether v lies strictly inside t.
func (v view) inside(t view) bool {
	for _, a := range v.above {
		if same(a, t.self) {
			return true
		}
	}
	return t.key == "/" && v.key != "/" || strings.HasPrefix(v.key, t.key+"/")
}

// foldPath is the key a case-insensitive filesystem compares names by: Unicode full case
// folding, then canonical decomposition (NFD), as APFS and ext4's casefold do. It is spelled out
// here rather than taken from internal/casefs, a FUSE test fixture the product must not link.
func foldPath(p string) string {
	return norm.NFD.String(cases.Fold().String(p))
}

// caseInsensitive reports whether the filesystem holding p folds case: always on macOS and
// Windows (their default filesystems do), and elsewhere when another spelling of the deepest
// existing name that has a letter reaches the same file.
func caseInsensitive(p string) bool {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return true
	}
	for d := p; filepath.Dir(d) != d; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		other := flipCase(filepath.Base(d))
		if other == filepath.Base(d) {
			continue
		}
		ofi, err := os.Lstat(filepath.Join(filepath.Dir(d), other))
		return err == nil && os.SameFile(fi, ofi)
	}
	return false
}

// flipCase swaps the case of every letter of name.
func flipCase(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsUpper(r) {
			return unicode.ToLower(r)
		}
		return unicode.ToUpper(r)
	}, name)
}
