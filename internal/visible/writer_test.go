package visible

import (
	"bytes"
	"testing"
)

// TestWriter: guest stderr reaches the terminal with control characters escaped and
// reports the full length written, so the SSH copy does not stop early.
func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := &Writer{W: &b}
	in := "ok\n\x1b]0;owned\x07\n"
	n, err := w.Write([]byte(in))
	if err != nil || n != len(in) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	if bytes.ContainsAny(b.Bytes(), "\x1b\x07") || !bytes.HasPrefix(b.Bytes(), []byte("ok\n")) {
		t.Errorf("escaped output %q still holds control characters or lost the newline", b.String())
	}
}
