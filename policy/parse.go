package policy

// This file turns a TOML document into the flat list of key definitions the classifier reads.
// Rules:
//   - keys are taken as written: each part decoded from its quoting and escapes exactly as TOML
//     defines (so "net\u0077ork", dotted keys, inline tables and [table] headers spell the same
//     path) and never folded, so a case or Unicode variant stays a different, unknown key;
//   - each definition keeps its line and its raw spelling for the error message;
//   - the file is refused before parsing when it holds a NUL byte or invalid UTF-8, and parts
//     are refused when nested deeper than maxDepth, when an array has more than maxArray
//     elements, or when there are more than maxEntries definitions;
//   - the document must also decode with go-toml's full decoder, which enforces the table
//     rules (redefinition, inline tables closed): a file either parser refuses is refused.

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

const (
	maxDepth   = 4    // key parts plus value nesting
	maxArray   = 1024 // elements of one array
	maxEntries = 2048 // key definitions in one file
)

// entry is one key definition: a key = value, a [table] header, or a key of an inline table.
type entry struct {
	path  []string // decoded key parts, from the root
	raw   string   // the path as written (raw parts joined by "."), unescaped of nothing
	line  int
	table bool // a [table] header or an inline table: no scalar value
	array bool // an [[array of tables]] header
	value any  // string, int64, bool, []any, or otherType for other TOML values
}

// otherType stands for a TOML value no key accepts (float, date, time, inline table in an array).
type otherType string

// document is a parsed file.
type document struct {
	entries []entry
}

// problem is a structural defect found while parsing, before classification.
type problem struct {
	line int
	key  string // raw key, or "" for the whole file
	msg  string
}

// parseDocument parses data. Structural problems are returned with the entries found so far; a
// syntax error ends parsing and is the only problem returned with it.
func parseDocument(data []byte) (*document, []problem) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, []problem{{line: lineAt(data, i), msg: "holds a NUL byte"}}
	}
	if !utf8.Valid(data) {
		return nil, []problem{{line: lineAt(data, firstInvalid(data)), msg: "is not valid UTF-8"}}
	}
	w := &walker{seen: map[string]int{}}
	w.p.Reset(data)
	var prefix []string
	var prefixRaw string
	for w.p.NextExpression() {
		expr := w.p.Expression()
		switch expr.Kind {
		case unstable.Table, unstable.ArrayTable:
			path, raw, line := w.key(expr.Key(), nil, "")
			w.add(entry{path: path, raw: raw, line: line, table: true, array: expr.Kind == unstable.ArrayTable})
			prefix, prefixRaw = path, raw
		case unstable.KeyValue:
			w.keyValue(expr, prefix, prefixRaw)
		}
		if len(w.entries) > maxEntries {
			w.problems = append(w.problems, problem{msg: fmt.Sprintf("has more than %d keys", maxEntries)})
			return &document{entries: w.entries}, w.problems
		}
	}
	if err := w.p.Error(); err != nil {
		return nil, []problem{{line: w.errLine(err), msg: "is not valid TOML: " + err.Error()}}
	}
	if len(w.problems) == 0 {
		var m map[string]any
		if err := toml.Unmarshal(data, &m); err != nil {
			line := 0
			var de *toml.DecodeError
			if errors.As(err, &de) {
				line, _ = de.Position()
			}
			return nil, []problem{{line: line, msg: "is not valid TOML: " + err.Error()}}
		}
	}
	return &document{entries: w.entries}, w.problems
}

// walker collects entries from the parser's expressions.
type walker struct {
	p        unstable.Parser
	entries  []entry
	problems []problem
	seen     map[string]int // path → line of its definition, for duplicates
}

// key reads a (possibly dotted) key, appending it to prefix.
func (w *walker) key(it unstable.Iterator, prefix []string, prefixRaw string) ([]string, string, int) {
	path := append([]string(nil), prefix...)
	raws := []string{}
	if prefixRaw != "" {
		raws = append(raws, prefixRaw)
	}
	line := 0
	for it.Next() {
		n := it.Node()
		path = append(path, string(n.Data))
		raws = append(raws, string(w.p.Raw(n.Raw)))
		if line == 0 {
			line = w.p.Shape(n.Raw).Start.Line
		}
	}
	return path, strings.Join(raws, "."), line
}

// keyValue records a key = value under prefix, recursing into inline tables.
func (w *walker) keyValue(kv *unstable.Node, prefix []string, prefixRaw string) {
	path, raw, line := w.key(kv.Key(), prefix, prefixRaw)
	v := kv.Value()
	if v.Kind == unstable.InlineTable {
		w.add(entry{path: path, raw: raw, line: line, table: true})
		if len(path) >= maxDepth {
			if v.Child() != nil {
				w.problems = append(w.problems, problem{line: line, key: raw, msg: fmt.Sprintf("is nested deeper than %d levels", maxDepth)})
			}
			return
		}
		it := v.Children()
		for it.Next() {
			if it.Node().Kind == unstable.KeyValue {
				w.keyValue(it.Node(), path, raw)
			}
		}
		return
	}
	val, err := w.value(v, len(path))
	if err != "" {
		w.problems = append(w.problems, problem{line: line, key: raw, msg: err})
	}
	w.add(entry{path: path, raw: raw, line: line, value: val})
}

// add records e, reporting depth and duplicates.
func (w *walker) add(e entry) {
	if len(e.path) > maxDepth {
		w.problems = append(w.problems, problem{line: e.line, key: e.raw, msg: fmt.Sprintf("is nested deeper than %d levels", maxDepth)})
		return
	}
	id := strings.Join(e.path, "\x00")
	if first, dup := w.seen[id]; dup && !e.array {
		w.problems = append(w.problems, problem{line: e.line, key: e.raw, msg: fmt.Sprintf("is defined twice (first at line %d)", first)})
		return
	}
	w.seen[id] = e.line
	w.entries = append(w.entries, e)
}

// value converts a value node; depth counts the levels above it. It returns a message when the
// value is refused.
func (w *walker) value(n *unstable.Node, depth int) (any, string) {
	switch n.Kind {
	case unstable.String:
		return string(n.Data), ""
	case unstable.Bool:
		return string(n.Data) == "true", ""
	case unstable.Integer:
		i, err := strconv.ParseInt(string(n.Data), 0, 64)
		if err != nil {
			return otherType("integer"), "has an integer out of range"
		}
		return i, ""
	case unstable.Array:
		if depth+1 > maxDepth {
			return otherType("array"), fmt.Sprintf("is nested deeper than %d levels", maxDepth)
		}
		var out []any
		it := n.Children()
		for it.Next() {
			if len(out) == maxArray {
				return otherType("array"), fmt.Sprintf("has an array of more than %d elements", maxArray)
			}
			v, err := w.value(it.Node(), depth+1)
			if err != "" {
				return otherType("array"), err
			}
			out = append(out, v)
		}
		return out, ""
	case unstable.InlineTable:
		return otherType("table"), ""
	}
	return otherType(strings.ToLower(n.Kind.String())), ""
}

// errLine finds the line of a parser error's highlight.
func (w *walker) errLine(err error) (line int) {
	var pe *unstable.ParserError
	if !errors.As(err, &pe) || len(pe.Highlight) == 0 {
		return 0
	}
	defer func() {
		if recover() != nil {
			line = 0
		}
	}()
	return w.p.Shape(w.p.Range(pe.Highlight)).Start.Line
}

// lineAt returns the 1-based line of byte offset i.
func lineAt(data []byte, i int) int { return bytes.Count(data[:i], []byte{'\n'}) + 1 }

// firstInvalid returns the offset of the first invalid UTF-8 sequence.
func firstInvalid(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(data)
}
