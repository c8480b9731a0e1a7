package policy

// This file applies command-line values. Flags are trusted (the user typed them) and override
// every file; they are checked exactly as file values are, and named in errors as flags.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// flags applies l.opts.Flags, adding a violation for each bad one.
func (l *loader) flags() {
	for _, f := range l.opts.Flags {
		bad := func(class, problem string) {
			l.vs.add(Violation{File: "flag --" + f.Key, Key: f.Key, Class: class, Problem: problem})
		}
		spec := lookupKey(f.Key)
		if spec == nil {
			bad("unknown", "is not a configuration key")
			continue
		}
		s, problem := flagSetting(spec, f.Value)
		if problem == "" {
			problem = checkValue(s, l.opts.TopLevel)
		}
		if problem != "" {
			bad(spec.Class.String(), problem)
			continue
		}
		l.apply(s, Origin{Layer: LayerFlag, Name: f.Key})
	}
}

// flagSetting converts a flag's text to a setting of spec's kind.
func flagSetting(spec *KeySpec, text string) (setting, string) {
	s := setting{spec: spec, raw: spec.Name}
	var err error
	switch spec.Kind {
	case KindString:
		s.value = text
	case KindInt:
		var n int
		n, err = strconv.Atoi(text)
		s.value = n
	case KindBool:
		b, ok := spec.Words[text]
		if !ok {
			b, err = strconv.ParseBool(text)
		}
		s.value = b
	case KindDuration:
		var d time.Duration
		d, err = time.ParseDuration(text)
		if err == nil && !durationOK(d) {
			err = fmt.Errorf("out of range")
		}
		s.value = d
	case KindStrings:
		s.value = []string{text}
	case KindStringMap:
		name, val, ok := strings.Cut(text, "=")
		if !ok {
			return s, fmt.Sprintf("must be NAME=value, not %q", text)
		}
		s.mapKey, s.value = name, val
	}
	if err != nil {
		return s, fmt.Sprintf("must be a %s, not %q", spec.Kind, text)
	}
	return s, ""
}
