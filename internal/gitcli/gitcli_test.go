package gitcli

import (
	"strings"
	"testing"
)

// TestStdin: Stdin reaches git (update-ref --stdin takes ref names there); without it git
// reads nothing.
func TestStdin(t *testing.T) {
	g := Git{Dir: t.TempDir(), Stdin: strings.NewReader("hello\n")}
	out, err := g.Output(t.Context(), "hash-object", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	// git hash-object of "hello\n", as `printf 'hello\n' | git hash-object --stdin` prints it.
	if got := strings.TrimSpace(string(out)); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("hash of stdin = %s", got)
	}
	g.Stdin = nil
	out, err = g.Output(t.Context(), "hash-object", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" {
		t.Errorf("hash without stdin = %s, want the empty blob's", got)
	}
}
