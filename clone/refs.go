package clone

// Ref name rules: git's check-ref-format, plus what a reviewer's terminal needs. Clone mode
// takes only refs/heads/* and refs/tags/* (other advertised refs are ignored, not written), and
// each name taken must:
//   - have no component that is empty, starts with '.', ends with ".lock" or is a .git alias;
//   - contain no "..", "@{", control characters, space, DEL, ~ ^ : ? * [ \, and no invisible
//     or bidi characters (internal/visible), so that what a reviewer reads is what exists;
//   - not end with '/' or '.', not be "@", and be at most 1024 bytes.

import (
	"strings"

	"github.com/git-corral/git-corral/internal/visible"
)

const maxRefName = 1024

// RefNameProblem says why a full ref name is refused, or "".
func RefNameProblem(name string) string {
	switch {
	case len(name) > maxRefName:
		return "longer than 1024 bytes"
	case !strings.HasPrefix(name, "refs/heads/") && !strings.HasPrefix(name, "refs/tags/"):
		return "not under refs/heads/ or refs/tags/"
	case strings.Contains(name, ".."):
		return "contains '..'"
	case strings.Contains(name, "@{"):
		return "contains '@{'"
	case strings.ContainsAny(name, " ~^:?*[\\\x7f"):
		return "contains one of space ~ ^ : ? * [ \\ DEL"
	case visible.Has(name):
		return "contains a control, invisible or bidi character"
	case strings.HasSuffix(name, "/") || strings.HasSuffix(name, "."):
		return "ends with '/' or '.'"
	}
	for _, c := range strings.Split(name, "/") {
		switch {
		case c == "":
			return "has an empty component ('//')"
		case c == "@":
			return "has a component '@'"
		case strings.HasPrefix(c, "."):
			return "has a component starting with '.'"
		case strings.HasSuffix(c, ".lock"):
			return "has a component ending with '.lock'"
		case isDotGitLike(c):
			return "has a component naming .git"
		}
	}
	return ""
}

// BranchNameProblem checks a short branch name (as given to Deliver) by the same rules.
func BranchNameProblem(branch string) string {
	switch {
	case branch == "":
		return "is empty"
	case strings.HasPrefix(branch, "-"):
		return "starts with '-' (it would be read as an option)"
	}
	return RefNameProblem("refs/heads/" + branch)
}

// wantedRef reports whether clone mode takes the advertised ref name at all.
func wantedRef(name string) bool {
	return strings.HasPrefix(name, "refs/heads/") || strings.HasPrefix(name, "refs/tags/")
}
