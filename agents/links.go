package agents

// This file decides whether a symbolic link in a package stays inside it. Rules:
//   - a link is resolved the way the kernel would resolve it, against the tree as it is on disk
//     once every entry is in place (never one link at a time, never lexically): each element of
//     its target is looked up with fstatat (AT_SYMLINK_NOFOLLOW) and a link met on the way is
//     replaced by its own target, so `d -> .`, `e -> d/..`, `u0 -> e/..` is seen to climb out;
//   - the link is refused when any step of that walk goes above the package's top directory
//     (even if a later step would come back in), when any target on the way is absolute or
//     empty, and after maxLinkHops links (a loop);
//   - below a name that does not exist, or that is not a directory, nothing can resolve: the
//     rest of the target is still walked lexically, so a ".." there that climbs out is refused
//     too (stricter than the kernel, never looser);
//   - lookups go by the names on disk, so a host file system that folds case or normalises
//     names resolves here as it would for the kernel.
// Nothing is opened or followed: the walk reads link targets and file types only.

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinkHops is how many links one resolution may pass through (Linux's own limit).
const maxLinkHops = 40

// errLeaves: a link resolves outside its package.
var errLeaves = errors.New("resolves outside the package")

// resolveInside resolves the link rel (a path under the open directory root whose directory
// elements are real directories) and returns an error wrapping errLeaves, naming the chain of
// links it passed through, when the resolution leaves root.
func resolveInside(root int, rel string) error {
	var stack []string // resolved elements below root; each but the last is a real directory
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		stack = strings.Split(rel[:i], "/")
	}
	chain := []string{}
	pending := []string{}
	link, hops, missing := rel, 0, false
	for {
		if link != "" {
			target, err := readlinkAt(root, link)
			if err != nil {
				return err
			}
			chain = append(chain, fmt.Sprintf("%q -> %q", link, target))
			if hops++; hops > maxLinkHops {
				return fmt.Errorf("link %s: more than %d links deep (a loop): %w", strings.Join(chain[:3], ", "), maxLinkHops, errLeaves)
			}
			if target == "" || strings.HasPrefix(target, "/") {
				return fmt.Errorf("link %s: an absolute or empty target %w", strings.Join(chain, ", "), errLeaves)
			}
			pending = append(strings.Split(target, "/"), pending...)
			link = ""
		}
		if len(pending) == 0 {
			return nil
		}
		el := pending[0]
		pending = pending[1:]
		switch el {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return fmt.Errorf("link %s: %w", strings.Join(chain, ", "), errLeaves)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, el)
		if missing {
			continue
		}
		var st unix.Stat_t
		p := strings.Join(stack, "/")
		switch err := unix.Fstatat(root, p, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			missing = true
		case err != nil:
			return fmt.Errorf("look up %q: %w", p, err)
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			link = p
			stack = stack[:len(stack)-1]
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			missing = len(pending) > 0 // a file in the middle of a path resolves to nothing
		}
	}
}
