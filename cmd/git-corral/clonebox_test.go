package main

import (
	"bytes"
	"testing"
)

// TestCheckoutPath: the guest checkout is always under the box user's home in src/, whatever the
// host directory is called; hostile homes are refused and hostile names become "checkout".
func TestCheckoutPath(t *testing.T) {
	for _, tc := range []struct {
		home, name, want string
		fails            bool
	}{
		{"/home/ci.linux", "repo", "/home/ci.linux/src/repo", false},
		{"/home/ci.linux", "my repo", "/home/ci.linux/src/my repo", false},
		{"/home/ci.linux", "..", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", ".ssh", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", "-rf", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", "a\nb", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", "x\u202ey", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", "", "/home/ci.linux/src/checkout", false},
		{"", "repo", "", true},
		{"relative", "repo", "", true},
		{"/", "repo", "", true},
		{"/home/../etc", "repo", "", true},
		{"/home/a\nb", "repo", "", true},
	} {
		got, err := checkoutPath(tc.home, tc.name)
		if (err != nil) != tc.fails || got != tc.want {
			t.Errorf("checkoutPath(%q, %q) = %q, %v; want %q, fails %v", tc.home, tc.name, got, err, tc.want, tc.fails)
		}
	}
}

// TestEscapedWriter: guest stderr reaches the terminal with control characters escaped and
// reports the full length written, so the SSH copy does not stop early.
func TestEscapedWriter(t *testing.T) {
	var b bytes.Buffer
	w := &escapedWriter{w: &b}
	in := "ok\n\x1b]0;owned\x07\n"
	n, err := w.Write([]byte(in))
	if err != nil || n != len(in) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	if bytes.ContainsAny(b.Bytes(), "\x1b\x07") || !bytes.HasPrefix(b.Bytes(), []byte("ok\n")) {
		t.Errorf("escaped output %q still holds control characters or lost the newline", b.String())
	}
}
