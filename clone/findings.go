package clone

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/git-corral/git-corral/internal/visible"
)

// Class names the kind of hostile input a Finding is about (THREATS.md §3).
type Class string

const (
	// ClassTree is a tree entry: .git components, "..", bad modes, symlink tricks, deep paths.
	ClassTree Class = "tree"
	// ClassRef is a ref name.
	ClassRef Class = "ref"
	// ClassGitmodules is a .gitmodules value.
	ClassGitmodules Class = "gitmodules"
	// ClassLimit is a cap on size, count, depth or time.
	ClassLimit Class = "limit"
	// ClassBundle is the framing of a bundle coming back from a box.
	ClassBundle Class = "bundle"
)

// Finding is one problem found in fetched data.
type Finding struct {
	// Class is the kind of problem.
	Class Class `json:"class"`
	// Object is the hash of the object it was found in ("" for refs and limits).
	Object string `json:"object,omitempty"`
	// Path is the tree entry, ref name or .gitmodules key it concerns, as found (untrusted).
	Path string `json:"path,omitempty"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
}

// String renders f with every untrusted character made visible.
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(string(f.Class))
	if f.Path != "" {
		fmt.Fprintf(&b, " %s", visible.String(fmt.Sprintf("%q", f.Path)))
	}
	if f.Object != "" {
		fmt.Fprintf(&b, " (object %.12s)", f.Object)
	}
	b.WriteString(": ")
	b.WriteString(visible.String(f.Reason))
	return b.String()
}

// ErrRefused is wrapped by every refusal of fetched data; errors.As finds the *RefusedError.
var ErrRefused = errors.New("repository refused")

// RefusedError lists every problem that refused a fetch (up to maxFindings).
type RefusedError struct {
	Findings []Finding
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problem(s)", ErrRefused, len(e.Findings))
	for _, f := range e.Findings {
		b.WriteString("\n  ")
		b.WriteString(f.String())
	}
	return b.String()
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// Has reports whether any finding is of class c.
func (e *RefusedError) Has(c Class) bool {
	for _, f := range e.Findings {
		if f.Class == c {
			return true
		}
	}
	return false
}

// maxFindings bounds the list so that a hostile repository cannot flood the report.
const maxFindings = 50

// findings collects problems (refusals) and warnings (flagged, not refused).
type findings struct {
	problems []Finding
	warnings []Finding
}

func (fs *findings) refuse(f Finding) {
	if len(fs.problems) < maxFindings {
		fs.problems = append(fs.problems, f)
	}
}

// warn records f once: the same .gitmodules blob reached from several commits or trees is
// one warning.
func (fs *findings) warn(f Finding) {
	if len(fs.warnings) < maxFindings && !slices.Contains(fs.warnings, f) {
		fs.warnings = append(fs.warnings, f)
	}
}

func (fs *findings) full() bool { return len(fs.problems) >= maxFindings }

func (fs *findings) err() error {
	if len(fs.problems) == 0 {
		return nil
	}
	return &RefusedError{Findings: fs.problems}
}

// limitError is a refusal for one exceeded cap.
func limitError(format string, args ...any) error {
	return &RefusedError{Findings: []Finding{{Class: ClassLimit, Reason: fmt.Sprintf(format, args...)}}}
}
