package policy

// This file is the error a load fails with. Rules: it carries every violation of every layer at
// once, each naming the file and line, the key as written (escaped for the terminal: a hostile
// key cannot drive it), its class, what is wrong, why it matters and where the setting belongs.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/git-corral/git-corral/internal/visible"
)

// Violation is one refused setting.
type Violation struct {
	// File is the configuration file, or "flag" for a command-line flag.
	File string `json:"file"`
	// Line is the 1-based line in File, or 0 when it concerns the whole file.
	Line int `json:"line"`
	// Key is the key as written in the file (quotes and escapes included), with control, bidi
	// and invisible characters escaped by internal/visible; "" for the whole file.
	Key string `json:"key"`
	// Class is the key's trust class, or "unknown" or "invalid".
	Class string `json:"class"`
	// Problem says what is wrong.
	Problem string `json:"problem"`
	// Why says why it is dangerous or refused; may be "".
	Why string `json:"why,omitempty"`
	// Belongs names where the setting may be made instead (the exact trusted file); may be "".
	Belongs string `json:"belongs,omitempty"`
}

// String renders the violation on one line: file:line: key "k" (class): problem; why; where.
func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(visible.String(v.File))
	if v.Line > 0 {
		fmt.Fprintf(&b, ":%d", v.Line)
	}
	b.WriteString(": ")
	if v.Key != "" {
		fmt.Fprintf(&b, "key '%s' (%s): ", v.keyText(), v.Class)
	}
	b.WriteString(visible.String(v.Problem))
	if v.Why != "" {
		b.WriteString(": " + v.Why)
	}
	if v.Belongs != "" {
		b.WriteString("; set it in " + visible.String(v.Belongs) + " instead")
	}
	return b.String()
}

// keyText is the key as printed: control, bidi and invisible characters escaped.
func (v Violation) keyText() string { return visible.String(v.Key) }

// Violations is the error of a load that found violations; it lists every one.
type Violations struct {
	List []Violation
}

// Error lists every violation, one per line after a summary.
func (e *Violations) Error() string {
	var b strings.Builder
	n := len(e.List)
	fmt.Fprintf(&b, "configuration refused: %d violation", n)
	if n != 1 {
		b.WriteString("s")
	}
	for _, v := range e.List {
		b.WriteString("\n  " + v.String())
	}
	return b.String()
}

// add appends a violation, escaping its untrusted text for the terminal (and for JSON readers
// that print it).
func (e *Violations) add(v Violation) {
	v.File, v.Key, v.Problem = visible.String(v.File), visible.String(v.Key), visible.String(v.Problem)
	e.List = append(e.List, v)
}

// sort orders the violations by file (in the order files were read) and line.
func (e *Violations) sort() {
	rank := map[string]int{}
	for _, v := range e.List {
		if _, ok := rank[v.File]; !ok {
			rank[v.File] = len(rank)
		}
	}
	sort.SliceStable(e.List, func(i, j int) bool {
		a, b := e.List[i], e.List[j]
		if rank[a.File] != rank[b.File] {
			return rank[a.File] < rank[b.File]
		}
		return a.Line < b.Line
	})
}

// err returns e as an error, or nil when it is empty.
func (e *Violations) err() error {
	if len(e.List) == 0 {
		return nil
	}
	return e
}
