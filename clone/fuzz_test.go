package clone

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	format "github.com/go-git/go-git/v5/plumbing/format/config"
)

// FuzzGitmodules: any .gitmodules GitmodulesProblems accepts has no submodule value that starts
// with '-', holds a control character, or a url that is a transport helper, file: or absolute.
func FuzzGitmodules(f *testing.F) {
	f.Add([]byte("[submodule \"a\"]\n\tpath = a\n\turl = https://x/y\n"))
	f.Add([]byte("[submodule \"../x\"]\n\tpath = -a\n\turl = ext::sh\n\tupdate = !x\n"))
	f.Add([]byte("[submodule \"a\"]\r\n\tpath = \"a\\n\"\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(GitmodulesProblems(data)) > 0 {
			return
		}
		cfg := format.New()
		if err := format.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
			t.Fatalf("accepted an unparseable file: %v", err)
		}
		for _, sec := range cfg.Sections {
			if !strings.EqualFold(sec.Name, "submodule") {
				continue
			}
			for _, sub := range sec.Subsections {
				if submoduleNameProblem(sub.Name) != "" {
					t.Fatalf("accepted name %q", sub.Name)
				}
				for _, o := range sub.Options {
					v := o.Value
					if strings.HasPrefix(v, "-") || hasControl(v) {
						t.Fatalf("accepted %s = %q", o.Key, v)
					}
					if strings.EqualFold(o.Key, "url") && (strings.Contains(v, "::") || strings.HasPrefix(strings.ToLower(v), "file:") || strings.HasPrefix(v, "/")) {
						t.Fatalf("accepted url %q", v)
					}
				}
			}
		}
	})
}

// FuzzReadBundle: whatever a box sends, readBundle returns (never panics or hangs) and any
// branch it accepts has a valid name.
func FuzzReadBundle(f *testing.F) {
	f.Add([]byte("# v2 git bundle\n" + strings.Repeat("a", 40) + " refs/heads/main\n\nPACK\x00\x00\x00\x02\x00\x00\x00\x00"))
	f.Add([]byte("# v3 git bundle\n@object-format=sha1\n-" + strings.Repeat("b", 40) + "\n\n"))
	f.Add([]byte("PACK"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		tmp, err := os.MkdirTemp(dir, "s")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		s, err := newStore(filepath.Join(tmp, "stage"))
		if err != nil {
			t.Fatal(err)
		}
		pf, err := os.Create(filepath.Join(tmp, "p"))
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		l := Limits{MaxPackBytes: 1 << 20, MaxObjects: 1000, MaxObjectBytes: 1 << 20, MaxDeltaDepth: 50}
		_ = l.Validate()
		heads, err := readBundle(bg(), bufio.NewReader(bytes.NewReader(data)), s, pf, l)
		if err != nil {
			return
		}
		for name := range heads {
			if why := BranchNameProblem(name); why != "" {
				t.Fatalf("accepted branch %q: %s", name, why)
			}
		}
	})
}
