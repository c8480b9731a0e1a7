package lazyre

import (
	"regexp"
	"strconv"
	"sync"
)

// Regexp is a regular expression compiled on first use; make one with New. It is safe for
// concurrent use, as *regexp.Regexp is.
type Regexp struct {
	pattern string
	once    sync.Once
	re      *regexp.Regexp
}

// New returns a Regexp for pattern, which is compiled the first time it is used. It only
// records the pattern: one allocation at start, where regexp.MustCompile of a counted
// repetition makes hundreds.
func New(pattern string) *Regexp { return &Regexp{pattern: pattern} }

// Regexp returns the compiled expression, compiling it now if it was not yet; a pattern that
// does not compile panics at every use, as regexp.MustCompile would have at start.
func (r *Regexp) Regexp() *regexp.Regexp {
	r.once.Do(func() { r.re, _ = regexp.Compile(r.pattern) })
	if r.re == nil {
		panic("lazyre: regexp: Compile(" + strconv.Quote(r.pattern) + ") failed")
	}
	return r.re
}

// String returns the source text of the pattern, without compiling it.
func (r *Regexp) String() string { return r.pattern }

// MatchString reports whether s contains any match of the expression.
func (r *Regexp) MatchString(s string) bool { return r.Regexp().MatchString(s) }

// FindStringSubmatch returns the leftmost match in s and its submatches, or nil.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.Regexp().FindStringSubmatch(s) }

// ReplaceAllString returns src with every match replaced by repl, $ expansions included.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.Regexp().ReplaceAllString(src, repl)
}
