package shellquote

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// roundTrip has a real /bin/sh print the quoted word back, to prove it is one word that means
// exactly s.
func roundTrip(t testing.TB, q string) string {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", "printf %s "+q).Output()
	if err != nil {
		t.Fatalf("sh -c 'printf %%s %s': %v", q, err)
	}
	return string(out)
}

// TestWordAndLine: hostile values come back from a real shell as themselves, one word; NUL is
// refused by both, newline and carriage return by Line only.
func TestWordAndLine(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", "'", "''", `\'`, "$(id)", "`id`", "a b\tc", "*", "-rf", "x;id", "'; id; '", "é\u202e", "${HOME}"} {
		for name, f := range map[string]func(string) (string, error){"Word": Word, "Line": Line} {
			q, err := f(s)
			if err != nil {
				t.Fatalf("%s(%q): %v", name, s, err)
			}
			if got := roundTrip(t, q); got != s {
				t.Errorf("%s(%q) = %s, which the shell reads as %q", name, s, q, got)
			}
		}
	}
	for _, s := range []string{"a\nb", "a\rb", "\n"} {
		q, err := Word(s)
		if err != nil || roundTrip(t, q) != s {
			t.Errorf("Word(%q) = %q, %v: a newline stays literal inside the quotes", s, q, err)
		}
		if _, err := Line(s); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Line(%q) = %v, want ErrUnsafe", s, err)
		}
	}
	for _, f := range []func(string) (string, error){Word, Line} {
		if _, err := f("a\x00b"); !errors.Is(err, ErrUnsafe) {
			t.Errorf("a NUL was quoted: %v", err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Path with a NUL did not panic")
		}
	}()
	Path("/x\x00y")
}

// FuzzWord: whatever Word and Line accept, a real shell reads back as exactly one word equal to
// the input; whatever they refuse holds the characters they name.
func FuzzWord(f *testing.F) {
	for _, s := range []string{"", "'", "a'b'c", "$(id)", "\n", "x\x00", "\r\n'", "\\", "'\\''"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, werr := Word(s)
		l, lerr := Line(s)
		if (werr != nil) != strings.ContainsRune(s, 0) {
			t.Fatalf("Word(%q): %v", s, werr)
		}
		if (lerr != nil) != strings.ContainsAny(s, "\x00\n\r") {
			t.Fatalf("Line(%q): %v", s, lerr)
		}
		if werr == nil {
			if lerr == nil && l != w {
				t.Fatalf("Line and Word differ on %q", s)
			}
			if got := roundTrip(t, w); got != s {
				t.Fatalf("Word(%q) = %s, read back as %q", s, w, got)
			}
			// One word: set -- WORD gives exactly one positional parameter.
			n, err := exec.Command("/bin/sh", "-c", "set -- "+w+"; printf %s $#").Output()
			if err != nil || string(n) != "1" {
				t.Fatalf("Word(%q) = %s is %s words", s, w, n)
			}
		}
	})
}
