// Package visible makes untrusted text safe to print on a terminal: every control character,
// bidirectional override, zero-width or other invisible format character is shown as an escape
// (\x1b, \u202e, …) so that a file name, config key or script line written by a hostile
// repository can neither drive the terminal nor hide or reorder what the user reads.
package visible

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with every invisible or control character escaped. Newlines and tabs are
// escaped too; use Lines to keep line structure.
func String(s string) string {
	return escape(s, false)
}

// Lines is String but keeps '\n' and '\t' as they are, for multi-line text such as scripts.
func Lines(s string) string {
	return escape(s, true)
}

// Has reports whether s contains a character String would escape.
func Has(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return true
			}
		}
		if Hidden(r) {
			return true
		}
	}
	return false
}

// Hidden reports whether r is a character a terminal does not show as itself: C0 and C1
// controls, DEL, bidi controls, zero-width and other format characters (Unicode Cf), line and
// paragraph separators, and unassigned or private-use code points.
func Hidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == '\u2028', r == '\u2029':
		return true
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r):
		return true
	case r == '\u115f', r == '\u1160', r == '\u3164', r == '\uffa0': // Hangul fillers render blank
		return true
	case !unicode.IsGraphic(r) && r != ' ':
		return true
	}
	return false
}

func escape(s string, keepLines bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && Hidden(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case Hidden(r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
