// Package httpheader says what an HTTP/1.x header field's name and value may hold: the two
// checks of golang.org/x/net/http/httpguts (ValidHeaderFieldName and ValidHeaderFieldValue)
// that policy needs, spelled out here so that policy, which the front on PATH links for
// `git corral sandbox`, does not link httpguts and through it x/net's IDNA and x/text's bidi
// tables (issue #30 point 6). TestSameAsHTTPGuts holds them to httpguts byte for byte.
//
// Rules (RFC 9110 section 5.1 and 5.5, as httpguts reads them):
//   - a name is one or more tchar: ALPHA, DIGIT and !#$%&'*+-.^_`|~;
//   - a value holds no control character (0x00-0x1f, 0x7f) but space and tab; any other
//     byte, UTF-8 or not, is allowed.
package httpheader

import "strings"

// tcharPunct are the punctuation characters of RFC 9110's tchar.
const tcharPunct = "!#$%&'*+-.^_`|~"

// ValidName reports whether v is a valid header field name (httpguts.ValidHeaderFieldName).
func ValidName(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		b := v[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte(tcharPunct, b) >= 0) {
			return false
		}
	}
	return true
}

// ValidValue reports whether v is a valid header field value (httpguts.ValidHeaderFieldValue).
func ValidValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' || b == 0x7f) && b != ' ' && b != '\t' {
			return false
		}
	}
	return true
}
