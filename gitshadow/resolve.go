package gitshadow

// Resolving a path the host's config names the way the kernel will when the host's git opens
// it: symlinks followed and ".." taken physically (after a symlink, ".." is the parent of its
// target, not of the link). Every symlink met inside the box's reach matters as much as the
// target, because the box can point it elsewhere; every directory on the way matters because
// the box could rename it away and put another in its place.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// maxHops bounds the symlinks followed while resolving one path, as the kernel's ELOOP does.
const maxHops = 40

// errLoop is returned for a path that passes through more than maxHops symlinks.
var errLoop = errors.New("too many levels of symbolic links")

// resolved is what resolving one path met.
type resolved struct {
	// links are the symlinks passed through, in order.
	links []string
	// dirs are the real directories the walk went through below the final path.
	dirs []string
	// final is the real path reached; when a component is missing, the rest of the path is
	// joined to it lexically (there is nothing there to follow yet).
	final string
	// exists is whether final exists.
	exists bool
}

// resolvePath resolves an absolute path p.
func resolvePath(p string) (resolved, error) {
	var r resolved
	rest := splitPath(p)
	cur := string(filepath.Separator)
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			r.final = filepath.Join(append([]string{next}, rest...)...)
			return r, nil
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if hops++; hops > maxHops {
				return r, errLoop
			}
			target, err := os.Readlink(next)
			if err != nil {
				return r, err
			}
			r.links = append(r.links, next)
			if filepath.IsAbs(target) {
				cur = string(filepath.Separator)
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if len(rest) > 0 {
			if !fi.IsDir() {
				r.final = filepath.Join(append([]string{next}, rest...)...)
				return r, nil
			}
			r.dirs = append(r.dirs, next)
		}
		cur = next
	}
	r.final, r.exists = cur, true
	return r, nil
}

// splitPath splits a path into its non-empty components.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(c rune) bool { return c == filepath.Separator })
}

// resolveWord turns a word from a config value into an absolute path: "~/" against HOME,
// a relative path against base. It returns "" for what names no local path (~user/, empty).
// The result is not cleaned: ".." after a symlink is resolved physically by resolvePath.
func resolveWord(w, base string) string {
	switch {
	case w == "" || strings.HasPrefix(w, "~") && !strings.HasPrefix(w, "~/") && w != "~":
		return ""
	case w == "~" || strings.HasPrefix(w, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		return home + strings.TrimPrefix(w, "~")
	case filepath.IsAbs(w):
		return w
	}
	return base + string(filepath.Separator) + w
}

// pathCandidates returns where the host's PATH lookup of a bare program name could land inside
// one of the dirs in reach: every PATH entry in reach up to the first entry, in reach or not,
// that holds an executable of that name (git takes the first). An empty or relative PATH entry
// is relative to base, where git runs the command.
func pathCandidates(name, pathEnv, base string, inReach func(string) bool) []string {
	var out []string
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		d = resolveWord(d, base)
		if d == "" {
			continue
		}
		cand := filepath.Join(d, name)
		if real, err := filepath.EvalSymlinks(d); inReach(d) || err == nil && inReach(real) {
			out = append(out, cand)
		}
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			break
		}
	}
	return out
}
