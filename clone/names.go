package clone

// Path component rules, the union of what git refuses on any platform (core.protectHFS and
// core.protectNTFS together, as git fsck does), because the box, a later checkout on another
// machine, or a human's merge must never meet these names:
//   - "", ".", ".." and names containing '/' or a NUL.
//   - ".git" in any case, also after dropping HFS+ ignorable code points (".g\u200cit") and
//     NTFS trailing dots and spaces (".git. "), NTFS alternate streams (".git::$INDEX_ALLOCATION")
//     and the 8.3 short name "GIT~1".
//   - The same for each part of a name split at '\' (a separator on Windows).
//   - Control characters (CR, LF, ESC…): legal in git, but they smuggle lines into every
//     tool that prints or scripts over paths.

import (
	"strings"
	"unicode"
)

// hfsIgnorable are the code points HFS+ drops when comparing names.
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// foldName is the name as a case-insensitive, HFS+- and NTFS-normalising file system sees it.
func foldName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if !hfsIgnorable(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	s := b.String()
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i] // NTFS alternate data stream: "x::$INDEX_ALLOCATION" is the directory x
	}
	return strings.TrimRight(s, ". ")
}

// isDotGitLike reports whether a component names a .git directory on some file system.
func isDotGitLike(name string) bool {
	f := foldName(name)
	return f == ".git" || f == "git~1"
}

// isDotLike reports whether a component is "." or ".." on some file system.
func isDotLike(name string) bool {
	f := foldName(name)
	return f == "" || f == "." || f == ".."
}

// specialFile returns the git-special file a component names (".gitmodules", ".gitattributes",
// ".gitignore", ".mailmap") on some file system, or "".
func specialFile(name string) string {
	f := foldName(name)
	short := map[string]string{"gitmod~1": ".gitmodules", "gitatt~1": ".gitattributes", "gitign~1": ".gitignore", "mailma~1": ".mailmap"}
	if s, ok := short[f]; ok {
		return s
	}
	switch f {
	case ".gitmodules", ".gitattributes", ".gitignore", ".mailmap":
		return f
	}
	return ""
}

// hasControl reports whether s holds a C0/C1 control character or DEL.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// componentProblem says why a tree entry name is refused, or "".
func componentProblem(name string) string {
	switch {
	case name == "":
		return "empty name"
	case strings.ContainsAny(name, "/\x00"):
		return "name contains '/' or NUL"
	case hasControl(name):
		return "name contains a control character"
	}
	for _, part := range strings.Split(name, `\`) {
		if isDotGitLike(part) {
			return "names a .git directory (checked case-insensitively, with HFS+/NTFS aliases such as GIT~1)"
		}
		if part != "" && isDotLike(part) {
			return "is '.' or '..' (or an HFS+/NTFS alias of it)"
		}
	}
	if name != strings.TrimRight(name, `\`) || strings.HasPrefix(name, `\`) {
		return `starts or ends with '\'`
	}
	return ""
}

// pathProblem checks a slash-separated relative path (a submodule path, a symlink's target
// component list) with componentProblem; absolute paths and empty components are refused.
func pathProblem(p string) string {
	if p == "" {
		return "empty path"
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) >= 2 && p[1] == ':') {
		return "absolute path"
	}
	for _, c := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if why := componentProblem(c); why != "" {
			return "component " + quote(c) + " " + why
		}
	}
	return ""
}

func quote(s string) string { return "\"" + s + "\"" }
