package cover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/text/cases"

	"github.com/git-corral/git-corral/clone"
)

// MaxPathLen is the longest hide or box_dirs path accepted, in bytes.
const MaxPathLen = 1024

// maxComponent is the longest path component any common file system stores, in bytes.
const maxComponent = 255

// Key names the configuration key a path came from.
type Key string

// The keys this package resolves.
const (
	KeyHide    Key = "hide"
	KeyBoxDirs Key = "box_dirs"
)

// ErrRefused is wrapped by every error for a path that Resolve refuses.
var ErrRefused = errors.New("path refused")

// Entry is one resolved path.
type Entry struct {
	// Key is the configuration key the path came from.
	Key Key
	// Index is its position in that key's list, for messages.
	Index int
	// Rel is the clean repository-relative path, in the host's on-disk spelling where it exists.
	Rel string
}

// Plan is what the guest must mount over the project at TopLevel (the same path on host and
// guest).
type Plan struct {
	// TopLevel is the project's top level.
	TopLevel string
	// Hide are the hidden paths, sorted.
	Hide []Entry
	// BoxDirs are the box_dirs directories, sorted.
	BoxDirs []Entry
}

// Empty reports whether the plan mounts nothing.
func (p *Plan) Empty() bool { return p == nil || len(p.Hide)+len(p.BoxDirs) == 0 }

// Resolve checks every hide and box_dirs path against the package's rules (doc.go) on the host
// checkout at top and returns the plan. reserved are absolute paths the git shadow mounts over
// (gitshadow.Plan.Expectations); no entry may be one of them, inside one or hold one. Every
// problem is reported at once.
func Resolve(top string, hide, boxDirs, reserved []string) (*Plan, error) {
	p := &Plan{TopLevel: top}
	var errs []error
	for _, in := range []struct {
		key  Key
		vals []string
		out  *[]Entry
	}{{KeyHide, hide, &p.Hide}, {KeyBoxDirs, boxDirs, &p.BoxDirs}} {
		for i, v := range in.vals {
			e, err := resolveOne(top, in.key, i, v)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			*in.out = append(*in.out, e)
		}
		sort.Slice(*in.out, func(i, j int) bool { return (*in.out)[i].Rel < (*in.out)[j].Rel })
	}
	errs = append(errs, overlaps(top, append(append([]Entry(nil), p.Hide...), p.BoxDirs...), reserved)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// refuse is the error for entry key[i] = v.
func refuse(key Key, i int, v, why string) error {
	return fmt.Errorf("%w: %s[%d] %q %s", ErrRefused, key, i, v, why)
}

// resolveOne checks one configured path and resolves it on the host.
func resolveOne(top string, key Key, i int, v string) (Entry, error) {
	if len(v) > MaxPathLen {
		return Entry{}, refuse(key, i, v[:40]+"…", fmt.Sprintf("is %d bytes long; at most %d", len(v), MaxPathLen))
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		// clone.PathProblem's text would echo the character into the user's terminal.
		return Entry{}, refuse(key, i, v, "holds a control character (NUL, newline, escape…); no path the box can see needs one")
	}
	if why := clone.PathProblem(v); why != "" {
		return Entry{}, refuse(key, i, v, why+"; write a path relative to the repository's top level, without '.', '..' or .git")
	}
	wantDir := strings.HasSuffix(v, "/")
	parts := strings.Split(strings.TrimSuffix(v, "/"), "/")
	for _, c := range parts {
		if len(c) > maxComponent {
			return Entry{}, refuse(key, i, v, fmt.Sprintf("has a component of %d bytes; at most %d", len(c), maxComponent))
		}
	}
	rel, fi, err := walk(top, parts)
	if err != nil {
		return Entry{}, refuse(key, i, v, err.Error())
	}
	if why := clone.PathProblem(rel); why != "" { // the on-disk spelling, on a case-insensitive host
		return Entry{}, refuse(key, i, v, "is "+rel+" on disk, which "+why)
	}
	if fi != nil {
		switch {
		case key == KeyBoxDirs && !fi.IsDir():
			return Entry{}, refuse(key, i, v, "exists and is not a directory")
		case wantDir && !fi.IsDir():
			return Entry{}, refuse(key, i, v, "ends in '/' but is not a directory")
		case !fi.IsDir() && !fi.Mode().IsRegular():
			return Entry{}, refuse(key, i, v, fmt.Sprintf("is a %s; only regular files and directories can be hidden", fi.Mode().Type()))
		}
	}
	return Entry{Key: key, Index: i, Rel: rel}, nil
}

// walk follows parts from top one component at a time, without following symlinks, and
// returns the path in its on-disk spelling and the last component's info (nil when a component
// is missing: the rest is kept as written). A symlink anywhere is an error naming its target.
func walk(top string, parts []string) (string, fs.FileInfo, error) {
	cur := top
	var out []string
	var fi fs.FileInfo
	for n, c := range parts {
		info, err := os.Lstat(filepath.Join(cur, c))
		if errors.Is(err, fs.ErrNotExist) {
			return strings.Join(append(out, parts[n:]...), "/"), nil, nil
		}
		if err != nil {
			return "", nil, fmt.Errorf("cannot be checked: %v", err)
		}
		if name, err := onDisk(cur, c); err == nil {
			c = name
		}
		out = append(out, c)
		if info.Mode()&fs.ModeSymlink != 0 {
			return "", nil, symlinkError(top, filepath.Join(cur, c), strings.Join(out, "/"))
		}
		if n < len(parts)-1 && !info.IsDir() {
			return "", nil, fmt.Errorf("goes through %q, which is not a directory", strings.Join(out, "/"))
		}
		cur, fi = filepath.Join(cur, c), info
	}
	return strings.Join(out, "/"), fi, nil
}

// symlinkError says where the symlink at full (rel in the repository) leads.
func symlinkError(top, full, rel string) error {
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return fmt.Errorf("goes through the symlink %q, which does not resolve (%v); hidden paths are never reached through a symlink", rel, err)
	}
	realTop, err := filepath.EvalSymlinks(top)
	if err != nil {
		return fmt.Errorf("cannot be checked: %v", err)
	}
	r, err := filepath.Rel(realTop, real)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return fmt.Errorf("goes through the symlink %q, which leads out of the repository to %q", rel, real)
	}
	return fmt.Errorf("goes through the symlink %q to %q in the repository; name %q itself instead", rel, r, r)
}

// onDisk returns the name of dir's entry that c reaches: c itself when dir holds it under that
// spelling, else the one entry a case-insensitive file system matched.
func onDisk(dir, c string) (string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return "", err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return "", err
	}
	folded := ""
	for _, n := range names {
		if n == c {
			return c, nil
		}
		if fold(n) == fold(c) {
			folded = n
		}
	}
	if folded == "" {
		return "", fs.ErrNotExist
	}
	return folded, nil
}

// fold is the key a case-insensitive file system compares names by.
func fold(s string) string { return cases.Fold().String(s) }

// overlaps refuses entries that are equal to, inside or around another entry or a reserved
// path, compared case-folded.
func overlaps(top string, all []Entry, reserved []string) []error {
	var errs []error
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, b+"/") }
	for i, a := range all {
		fa := fold(a.Rel)
		for _, b := range all[i+1:] {
			if fb := fold(b.Rel); within(fa, fb) || within(fb, fa) {
				errs = append(errs, refuse(b.Key, b.Index, b.Rel, fmt.Sprintf("overlaps %s[%d] %q; list each path once, neither inside the other", a.Key, a.Index, a.Rel)))
			}
		}
		for _, r := range reserved {
			rel, err := filepath.Rel(top, r)
			if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			if fr := fold(filepath.ToSlash(rel)); within(fa, fr) || within(fr, fa) {
				errs = append(errs, refuse(a.Key, a.Index, a.Rel, fmt.Sprintf("overlaps %q, which the git shadow mounts over; git metadata is guarded on its own", rel)))
			}
		}
	}
	return errs
}
