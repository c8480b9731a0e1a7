package policy

// This file classifies a parsed file's key definitions. Rules:
//   - a key is known only when its first part is spelled exactly as in the key table; a key
//     that equals a known one under case or Unicode simple folding (NETWORK, the Kelvin sign in
//     networK) is named as such, and every other unknown key is refused (fail closed);
//   - in the repository layer a trusted-only key is refused whatever its value or spelling
//     (table header, dotted key, inline table);
//   - the shape is checked before the value: a table where a string belongs, an array of
//     tables, a float or a date are type errors, never coerced.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// setting is one value a layer sets.
type setting struct {
	spec   *KeySpec
	mapKey string // for table-of-strings keys: the entry's name
	value  any    // string, int, bool, []string or time.Duration, per spec.Kind
	line   int
	raw    string
}

// layerInfo describes the layer being classified.
type layerInfo struct {
	layer   Layer
	file    string
	belongs string // the trusted file to name for settings the repository may not make
}

// classify turns entries into settings, adding a violation for each refused entry.
func classify(doc *document, li layerInfo, vs *Violations) []setting {
	var out []setting
	reported := map[string]bool{} // first key parts already refused as a whole
	for _, e := range doc.entries {
		top := e.path[0]
		if reported[top] {
			continue
		}
		bad := func(class, problem, why, belongs string) {
			vs.add(Violation{File: li.file, Line: e.line, Key: e.raw, Class: class, Problem: problem, Why: why, Belongs: belongs})
		}
		if top == sandboxTable {
			if s, ok := classifySandboxEntry(e, li, bad); !ok {
				reported[top] = li.layer != LayerRepository
			} else if s != nil {
				out = append(out, *s)
			}
			continue
		}
		spec := lookupKey(top)
		switch {
		case spec == nil:
			reported[top] = true
			if why, ok := retiredKeys[top]; ok {
				bad("unknown", "is no longer a configuration key", why, "")
			} else if known := foldMatch(top); known != "" {
				why, belongs := "keys are matched exactly, so a look-alike is refused rather than guessed", ""
				if k := lookupKey(known); k != nil && li.layer == LayerRepository && k.Class == TrustedOnly {
					why, belongs = why+"; "+known+" is trusted-only: "+k.Why, li.belongs
				}
				bad("unknown", fmt.Sprintf("differs from the key %q only by case or Unicode folding", known), why, belongs)
			} else {
				bad("unknown", "is not a configuration key", "unknown keys are refused so that nothing is silently ignored", "")
			}
			continue
		case li.layer == LayerRepository && spec.Class == TrustedOnly:
			reported[top] = true
			bad(spec.Class.String(), "may not be set by the repository", spec.Why, li.belongs)
			continue
		}
		s, problem := shape(spec, e)
		if problem != "" {
			reported[top] = spec.Kind != KindRoutes // each route field is its own key
			bad(spec.Class.String(), problem, "", "")
			continue
		}
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// foldMatch returns the known key (or the [sandbox] table) that name equals under case and
// Unicode simple folding.
func foldMatch(name string) string {
	if strings.EqualFold(name, sandboxTable) {
		return sandboxTable
	}
	for _, k := range keys {
		if strings.EqualFold(name, k.Name) {
			return k.Name
		}
	}
	return ""
}

// shape checks e against spec's kind and converts its value. It returns (nil, "") for a table
// header that only opens a table-of-strings key.
func shape(spec *KeySpec, e entry) (*setting, string) {
	if spec.Kind == KindRoutes {
		return shapeRoute(spec, e)
	}
	if e.array {
		return nil, "is an array of tables; " + spec.Name + " is a " + spec.Kind.String()
	}
	s := &setting{spec: spec, line: e.line, raw: e.raw}
	if spec.Kind == KindStringMap {
		switch {
		case len(e.path) == 1 && e.table:
			return nil, ""
		case len(e.path) == 2 && !e.table:
			str, ok := e.value.(string)
			if !ok {
				return nil, fmt.Sprintf("must be a string, not %s", typeName(e.value))
			}
			s.mapKey, s.value = e.path[1], str
			return s, ""
		}
		return nil, "must be a table of strings (NAME = \"value\")"
	}
	if len(e.path) != 1 || e.table {
		return nil, fmt.Sprintf("must be a %s, not a table", spec.Kind)
	}
	if w, ok := e.value.(string); ok && spec.Kind == KindBool && spec.Words != nil {
		if b, ok := spec.Words[w]; ok {
			s.value = b
			return s, ""
		}
		return nil, fmt.Sprintf("must be true, false or one of %s, not %q", wordList(spec.Words), w)
	}
	v, problem := convert(spec.Kind, e.value)
	s.value = v
	return s, problem
}

// wordList quotes a boolean key's words, sorted: "auto", "off".
func wordList(words map[string]bool) string {
	var q []string
	for w := range words {
		q = append(q, strconv.Quote(w))
	}
	sort.Strings(q)
	return strings.Join(q, ", ")
}

// convert checks a TOML value against kind and returns it as the Go type the kind uses.
func convert(kind Kind, v any) (any, string) {
	wrong := func() (any, string) {
		return nil, fmt.Sprintf("must be a %s, not %s", kind, typeName(v))
	}
	switch kind {
	case KindString:
		if s, ok := v.(string); ok {
			return s, ""
		}
	case KindInt:
		if i, ok := v.(int64); ok {
			if i < 0 || i > 1<<20 {
				return nil, fmt.Sprintf("is out of range (%d)", i)
			}
			return int(i), ""
		}
	case KindBool:
		if b, ok := v.(bool); ok {
			return b, ""
		}
	case KindDuration:
		s, ok := v.(string)
		if !ok {
			return wrong()
		}
		d, err := time.ParseDuration(s)
		if err != nil || !durationOK(d) {
			return nil, fmt.Sprintf("must be a duration such as \"30m\" between 0s and 8760h, not %q", s)
		}
		return d, ""
	case KindStrings:
		arr, ok := v.([]any)
		if !ok {
			return wrong()
		}
		out := make([]string, 0, len(arr))
		for _, x := range arr {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Sprintf("must be an array of strings, but holds %s", typeName(x))
			}
			out = append(out, s)
		}
		return out, ""
	}
	return wrong()
}

// typeName names a parsed value's TOML type for an error message.
func typeName(v any) string {
	switch x := v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case otherType:
		return "a " + string(x)
	case nil:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}
