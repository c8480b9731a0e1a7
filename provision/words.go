package provision

// This file turns a parsed shell word into the string the shell would see, where that can be
// known without running anything: quotes removed, backslash escapes ("\." is ".") and $'…'
// escapes decoded. Anything expanded at run time (variables, substitutions, unquoted globs and
// braces) makes the word dynamic; "$(dirname "$0")" and its spellings at its start mean the
// file's own directory.

import (
	"bytes"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word is one evaluated shell word.
type word struct {
	s       string // the value, when not dyn
	dyn     bool   // part of it is only known at run time
	prefix  string // the literal start, before the first run-time part
	selfDir bool   // it starts with the file's own directory
	text    string // the word as written, for messages
}

// selfDirSpellings are the usual ways a script names its own directory, with quotes, braces,
// spaces, "--" and "[0]" removed.
var selfDirSpellings = map[string]bool{
	"$(dirname$0)": true, "$(dirname$BASH_SOURCE)": true, "$0%/*": true, "$BASH_SOURCE%/*": true,
	"$(cd$(dirname$0)&&pwd)": true, "$(cd$(dirname$BASH_SOURCE)&&pwd)": true,
	"$(cd$(dirname$0)&&pwd-P)": true, "$(cd$(dirname$BASH_SOURCE)&&pwd-P)": true,
	"$(dirname$(realpath$0))": true, "$(dirname$(readlink-f$0))": true,
	"$(dirname$(realpath$BASH_SOURCE))": true, "$(dirname$(readlink-f$BASH_SOURCE))": true,
}

func printNode(n syntax.Node) string {
	var b bytes.Buffer
	if err := syntax.NewPrinter().Print(&b, n); err != nil {
		return "?"
	}
	return b.String()
}

func isSelfDir(p syntax.WordPart) bool {
	s := printNode(p)
	s = strings.NewReplacer(`"`, "", "'", "", "{", "", "}", "", " ", "", "--", "", "[0]", "").Replace(s)
	return selfDirSpellings[s]
}

// evalWord evaluates w as far as it can be known before running.
func evalWord(w *syntax.Word) word {
	out := word{text: printNode(w)}
	var b strings.Builder
	parts := w.Parts
	if len(parts) > 0 {
		first := parts[0]
		if q, ok := first.(*syntax.DblQuoted); ok && len(q.Parts) > 0 && isSelfDir(q.Parts[0]) {
			out.selfDir = true
			parts = append([]syntax.WordPart{&syntax.DblQuoted{Parts: q.Parts[1:]}}, parts[1:]...)
		} else if isSelfDir(first) {
			out.selfDir = true
			parts = parts[1:]
		}
	}
	if out.selfDir {
		b.WriteString(".")
	}
	dyn := func() {
		if !out.dyn {
			out.dyn, out.prefix = true, b.String()
		}
	}
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v, glob := unescapeLit(p.Value, false)
			if glob >= 0 {
				b.WriteString(v[:glob])
				dyn()
				v = v[glob:]
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					v, _ := unescapeLit(l.Value, true)
					b.WriteString(v)
				} else {
					dyn()
				}
			}
		default:
			dyn()
		}
	}
	out.s = b.String()
	if !out.dyn {
		out.prefix = out.s
	}
	return out
}

// unescapeLit removes the shell's backslash escapes from a literal; outside double quotes it
// also returns the index (in the result) of the first unquoted glob or brace character, or -1.
func unescapeLit(s string, inDouble bool) (string, int) {
	var b strings.Builder
	glob := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			n := s[i+1]
			i++
			switch {
			case n == '\n':
			case inDouble && !strings.ContainsRune("$`\"\\", rune(n)):
				b.WriteByte('\\')
				b.WriteByte(n)
			default:
				b.WriteByte(n)
			}
			continue
		}
		if !inDouble && glob < 0 && (strings.ContainsRune("*?[", rune(c)) || c == '{' && braceExpands(s[i:])) {
			glob = b.Len()
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

// braceExpands reports whether s, starting at "{", is a brace expansion ("{a,b}", "{1..3}")
// rather than a literal brace ("{}").
func braceExpands(s string) bool {
	end := strings.IndexByte(s, '}')
	return end > 0 && (strings.Contains(s[:end], ",") || strings.Contains(s[:end], ".."))
}

// ansiC decodes the escapes of a $'…' string that can spell a path.
func ansiC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; {
		case c == 'x' || c == 'u' || c == 'U':
			j := i + 1
			for j < len(s) && j < i+9 && strings.ContainsRune("0123456789abcdefABCDEF", rune(s[j])) && (c != 'x' || j < i+3) {
				j++
			}
			if v, err := strconv.ParseUint(s[i+1:j], 16, 32); err == nil {
				b.WriteRune(rune(v))
			}
			i = j - 1
		case c >= '0' && c <= '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 8)
			b.WriteByte(byte(v))
			i = j - 1
		case c == 'n':
			b.WriteByte('\n')
		case c == 't':
			b.WriteByte('\t')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// words evaluates a command's words.
func (a *analyser) words(ws []*syntax.Word) []evWord {
	out := make([]evWord, len(ws))
	for i, w := range ws {
		out[i] = evWord{word: evalWord(w), node: w}
	}
	return out
}

// evWord is an evaluated word with its node (nil for words made from a string).
type evWord struct {
	word
	node *syntax.Word
}
