package visible

import "testing"

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain key", "plain key"},
		{"café", "café"},
		{"a\x1b[31mred", `a\x1b[31mred`},
		{"line\nbreak", `line\nbreak`},
		{"cr\rhide", `cr\rhide`},
		{"bidi\u202eevil", `bidi\u202eevil`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"bom\ufeff", `bom\ufeff`},
		{"c1\u009bcsi", `c1\u009bcsi`},
		{"nul\x00", `nul\x00`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"tag\U000E0041", `tag\U000e0041`},
		{"filler\u3164", `filler\u3164`},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if Has(tt.in) != (tt.in != tt.want) {
			t.Errorf("Has(%q) = %v, want %v", tt.in, Has(tt.in), tt.in != tt.want)
		}
	}
}

func TestLinesKeepsLayout(t *testing.T) {
	in := "echo hi\n\tindent\x1b]0;title\x07\n"
	want := "echo hi\n\tindent\\x1b]0;title\\x07\n"
	if got := Lines(in); got != want {
		t.Errorf("Lines(%q) = %q, want %q", in, got, want)
	}
}
