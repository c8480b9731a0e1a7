package clone

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRequestValidate: every argument of "git corral clone" that looks like an option (or
// smuggles a line) is refused by name before anything runs; the same request with a plain value
// in that place passes.
func TestRequestValidate(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	must(t, os.MkdirAll(repo, 0o755))
	good := Request{URL: repo, Dir: "dest", Branch: "main", Cwd: dir}
	if err := good.Validate(); err != nil {
		t.Fatalf("control request %+v: %v", good, err)
	}
	if err := (Request{URL: "https://example.com/r.git", Cwd: dir}).Validate(); err != nil {
		t.Fatalf("control request without DIR and branch: %v", err)
	}
	cases := []struct {
		name string
		edit func(*Request)
		arg  string
	}{
		{"branch option", func(r *Request) { r.Branch = "-oProxyCommand=x" }, "--branch"},
		{"branch double dash", func(r *Request) { r.Branch = "--upload-pack=touch /tmp/x" }, "--branch"},
		{"branch newline", func(r *Request) { r.Branch = "main\n-x" }, "--branch"},
		{"branch dot dot", func(r *Request) { r.Branch = "a..b" }, "--branch"},
		{"dir option", func(r *Request) { r.Dir = "-oProxyCommand=x" }, "DIR"},
		{"dir newline", func(r *Request) { r.Dir = "d\nx" }, "DIR"},
		{"url option", func(r *Request) { r.URL = "-oProxyCommand=x" }, "URL"},
		{"url upload-pack", func(r *Request) { r.URL = "--upload-pack=touch /tmp/x" }, "URL"},
		{"url bracket host", func(r *Request) { r.URL = "ssh://[-oProxyCommand=x]/r" }, "URL"},
		{"url dash user", func(r *Request) { r.URL = "ssh://-oProxyCommand=x@h/r" }, "URL"},
		{"url scp dash host", func(r *Request) { r.URL = "git@-oProxyCommand=x:r" }, "URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := good
			c.edit(&r)
			err := r.Validate()
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Arg != c.arg {
				t.Fatalf("Validate(%+v) = %v, want %s refused", r, err, c.arg)
			}
			if !strings.Contains(err.Error(), c.arg+" ") || !strings.Contains(err.Error(), "refused") {
				t.Errorf("error %q does not name %s", err, c.arg)
			}
			if c.arg == "URL" && !errors.Is(err, ErrSource) {
				t.Errorf("URL refusal %v does not wrap ErrSource", err)
			}
		})
	}
}
