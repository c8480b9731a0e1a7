package lazyre

import (
	"regexp"
	"testing"
)

// TestSameAsRegexp proves each method answers as the compiled expression does, on matches and
// on misses alike.
func TestSameAsRegexp(t *testing.T) {
	for _, tc := range []struct{ pattern, in string }{
		{`^[a-z0-9][a-z0-9-]{0,62}$`, "box-1"},
		{`^[a-z0-9][a-z0-9-]{0,62}$`, "Box_1"},
		{`^([1-9][0-9]{0,6})(KiB|MiB|GiB|TiB)$`, "256MiB"},
		{`^([1-9][0-9]{0,6})(KiB|MiB|GiB|TiB)$`, "256MB"},
		{`[^a-z0-9]+`, "My Project.git"},
	} {
		lazy, eager := New(tc.pattern), regexp.MustCompile(tc.pattern)
		if got, want := lazy.MatchString(tc.in), eager.MatchString(tc.in); got != want {
			t.Errorf("%q.MatchString(%q) = %v, want %v", tc.pattern, tc.in, got, want)
		}
		if got, want := lazy.FindStringSubmatch(tc.in), eager.FindStringSubmatch(tc.in); len(got) != len(want) || (got != nil) != (want != nil) {
			t.Errorf("%q.FindStringSubmatch(%q) = %q, want %q", tc.pattern, tc.in, got, want)
		}
		if got, want := lazy.ReplaceAllString(tc.in, "-"), eager.ReplaceAllString(tc.in, "-"); got != want {
			t.Errorf("%q.ReplaceAllString(%q) = %q, want %q", tc.pattern, tc.in, got, want)
		}
		if lazy.String() != tc.pattern || lazy.Regexp().String() != tc.pattern {
			t.Errorf("String() = %q, Regexp().String() = %q, want %q", lazy.String(), lazy.Regexp().String(), tc.pattern)
		}
	}
}

// TestLazy proves New does not compile: a pattern that cannot compile is accepted by New and
// panics only at its first use (the control: a good pattern does not panic there).
func TestLazy(t *testing.T) {
	bad := New(`([a-z]`)
	good := New(`([a-z])`)
	if good.MatchString("a") != true {
		t.Fatal("good pattern did not match")
	}
	for i := range 2 { // every use panics, not only the first
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("use %d of a bad pattern did not panic", i+1)
				}
			}()
			bad.MatchString("a")
		}()
	}
}
