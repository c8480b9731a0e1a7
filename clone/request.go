package clone

// Request rules: what "git corral clone" is asked to do is checked as typed, before anything is
// fetched, created or looked up, so that no value that looks like an option reaches any program
// (the box's git, ssh, a shell script) further down, even one that would refuse it later:
//   - URL passes ParseSource (no leading '-', no '-' host or user, also inside [brackets]);
//   - DIR is not empty, does not start with '-' and has no control character;
//   - --branch, when given, is a branch name BranchNameProblem accepts (so not "-o…").

import (
	"fmt"
	"strings"
	"unicode"
)

// Request is one clone as typed on the command line.
type Request struct {
	// URL is the repository address as given.
	URL string
	// Dir is the directory as given ("" when it is derived from URL).
	Dir string
	// Branch is the --branch value ("" means the source's HEAD branch).
	Branch string
	// Cwd resolves a relative local URL; "" means the process's working directory.
	Cwd string
}

// ArgError is a refused command-line argument: which one, the value as typed and why.
type ArgError struct {
	// Arg names the argument: "URL", "DIR" or a flag such as "--branch".
	Arg string
	// Value is the value as typed.
	Value string
	// Reason says what is wrong with it.
	Reason string
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("%s %q refused: %s", e.Arg, e.Value, e.Reason)
}

// Validate checks every argument of r and returns the first refused one as an *ArgError (the
// URL's refusal also wraps ErrSource). It reads nothing but the local source's directory entry.
func (r Request) Validate() error {
	if _, err := ParseSource(r.URL, r.Cwd); err != nil {
		why := strings.TrimPrefix(err.Error(), fmt.Sprintf("%s: %q: ", ErrSource, r.URL))
		return &argSourceError{ArgError{Arg: "URL", Value: r.URL, Reason: why}}
	}
	if r.Dir != "" {
		if why := optionLike(r.Dir); why != "" {
			return &ArgError{Arg: "DIR", Value: r.Dir, Reason: why}
		}
	}
	if r.Branch != "" {
		if why := BranchNameProblem(r.Branch); why != "" {
			return &ArgError{Arg: "--branch", Value: r.Branch, Reason: why}
		}
	}
	return nil
}

// argSourceError is an ArgError for the URL that also matches ErrSource.
type argSourceError struct{ ArgError }

func (e *argSourceError) Unwrap() []error { return []error{&e.ArgError, ErrSource} }

// optionLike says why a free-form argument could be read as an option or smuggle a line, or "".
func optionLike(v string) string {
	switch {
	case strings.HasPrefix(v, "-"):
		return "starts with '-' (it would be read as an option)"
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return "contains a control character (CR, LF, NUL, ESC…)"
	}
	return ""
}
