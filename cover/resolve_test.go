package cover

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/git-corral/git-corral/internal/casefs/casefstest"
)

// fixture makes a checkout-like tree: a hidden-worthy dir and file, a sibling, symlinks in and
// out of the repository, a FIFO, git metadata and a submodule's .git file.
func fixture(t *testing.T, top string) {
	t.Helper()
	for _, d := range []string{"secrets", "config", ".git/hooks", "sub", "private/keys"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"secrets/a.txt", "config/token.txt", "config/other.txt", "sub/.git", "private/keys/k"} {
		if err := os.WriteFile(filepath.Join(top, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"out": "/etc", "outfile": "/etc/hostname", "in": "private/keys", "dangling": "nowhere", "config/up": "../.."} {
		if err := os.Symlink(target, filepath.Join(top, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(top, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestResolveHostile is THREATS.md's path classes for hide and box_dirs: each refused entry
// sits beside accepted ones (the controls), and must be refused with a message that names it.
func TestResolveHostile(t *testing.T) {
	top := t.TempDir()
	fixture(t, top)
	long := strings.Repeat("a/", MaxPathLen/2) + "b"
	cases := []struct {
		name    string
		hide    string
		box     string
		refused string // "" when accepted; else a fragment of the error
		rel     string // the resolved path when accepted
	}{
		{name: "dir with slash", hide: "secrets/", rel: "secrets"},
		{name: "dir", hide: "secrets", rel: "secrets"},
		{name: "file", hide: "config/token.txt", rel: "config/token.txt"},
		{name: "missing path", hide: "later/.env", rel: "later/.env"},
		{name: "box_dirs missing", box: "node_modules", rel: "node_modules"},
		{name: "box_dirs dir", box: "private/keys", rel: "private/keys"},
		{name: "dot-dot out", hide: "../outside", refused: `".."`},
		{name: "dot-dot inside", hide: "config/../secrets", refused: `".."`},
		{name: "dot-dot trailing", hide: "secrets/..", refused: `".."`},
		{name: "absolute", hide: "/etc/passwd", refused: "absolute"},
		{name: "absolute into repo", hide: top + "/secrets", refused: "absolute"},
		{name: "dot first", hide: "./secrets", refused: `"."`},
		{name: "empty component", hide: "secrets//a.txt", refused: "empty name"},
		{name: "empty", hide: "", refused: "empty path"},
		{name: "only slash", hide: "/", refused: "absolute"},
		{name: ".git", hide: ".git", refused: ".git"},
		{name: ".git slash", hide: ".git/", refused: ".git"},
		{name: ".git hooks", hide: ".git/hooks", refused: ".git"},
		{name: ".GIT", hide: ".GIT/config", refused: ".git"},
		{name: ".Git nested", hide: "sub/.Git", refused: ".git"},
		{name: ".git trailing dot", hide: ".git.", refused: ".git"},
		{name: ".git trailing space", hide: ".git ", refused: ".git"},
		{name: ".git HFS ignorable", hide: ".g\u200cit/config", refused: ".git"},
		{name: ".git BOM", hide: "\ufeff.git", refused: ".git"},
		{name: "GIT~1", hide: "GIT~1/hooks", refused: ".git"},
		{name: ".git NTFS stream", hide: ".git::$INDEX_ALLOCATION/hooks", refused: ".git"},
		{name: ".git after backslash", hide: `x\.git`, refused: ".git"},
		{name: "box_dirs .git", box: ".git", refused: ".git"},
		{name: "NUL", hide: "secrets\x00/a", refused: "control character"},
		{name: "newline", hide: "secrets\n/etc", refused: "control"},
		{name: "carriage return", hide: "secrets\r", refused: "control"},
		{name: "escape", hide: "a\x1b[2Jb", refused: "control"},
		{name: "very long path", hide: long, refused: "bytes long"},
		{name: "very long component", hide: strings.Repeat("x", 300), refused: "component of 300 bytes"},
		{name: "symlink out", hide: "out", refused: "leads out of the repository"},
		{name: "through symlink out", hide: "out/passwd", refused: "leads out of the repository"},
		{name: "symlink to file out", hide: "outfile", refused: "leads out of the repository"},
		{name: "symlink up", hide: "config/up/etc", refused: "leads out of the repository"},
		{name: "symlink in", hide: "in", refused: `name "private/keys" itself`},
		{name: "through symlink in", hide: "in/k", refused: `name "private/keys" itself`},
		{name: "dangling symlink", hide: "dangling", refused: "does not resolve"},
		{name: "fifo", hide: "fifo", refused: "only regular files and directories"},
		{name: "file with slash", hide: "config/token.txt/", refused: "not a directory"},
		{name: "through a file", hide: "config/token.txt/x", refused: "not a directory"},
		{name: "box_dirs file", box: "config/token.txt", refused: "not a directory"},
		{name: "box_dirs symlink", box: "in", refused: "symlink"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hide, box []string
			if c.box != "" {
				box = []string{c.box}
			} else {
				hide = []string{c.hide}
			}
			// Every case also lists a plain sibling, which must never be what is refused.
			hide = append(hide, "config/other.txt")
			p, err := Resolve(top, hide, box, nil)
			if c.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				got := append(append([]Entry(nil), p.Hide...), p.BoxDirs...)
				if !hasRel(got, c.rel) || !hasRel(got, "config/other.txt") {
					t.Fatalf("resolved %+v, want %q and config/other.txt", got, c.rel)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %+v, want refused (%s)", p, c.refused)
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.refused) || strings.Contains(err.Error(), "other.txt") {
				t.Fatalf("error %q: want ErrRefused naming %q, and not the sibling", err, c.refused)
			}
			if strings.ContainsAny(err.Error(), "\x00\n\r\x1b") {
				t.Fatalf("error %q carries a control character into the terminal", err)
			}
		})
	}
}

func hasRel(es []Entry, rel string) bool {
	for _, e := range es {
		if e.Rel == rel {
			return true
		}
	}
	return false
}

// TestResolveOverlaps refuses paths that overlap each other or the git shadow's mounts, with
// the non-overlapping list as the control.
func TestResolveOverlaps(t *testing.T) {
	top := t.TempDir()
	fixture(t, top)
	reserved := []string{filepath.Join(top, ".git"), filepath.Join(top, "sub/.git"), filepath.Join(top, ".husky")}
	if _, err := Resolve(top, []string{"secrets/", "config/token.txt"}, []string{"node_modules", "target"}, reserved); err != nil {
		t.Fatalf("control: %v", err)
	}
	cases := []struct {
		name      string
		hide, box []string
		want      string
	}{
		{"same twice", []string{"secrets", "secrets/"}, nil, "overlaps"},
		{"inside another", []string{"secrets/", "secrets/a.txt"}, nil, "overlaps"},
		{"case variant of another", []string{"secrets", "SECRETS/a.txt"}, nil, "overlaps"},
		{"hide and box_dirs", []string{"node_modules"}, []string{"node_modules"}, "overlaps"},
		{"box_dirs inside hide", []string{"private/"}, []string{"private/keys"}, "overlaps"},
		{"holds a submodule's .git", []string{"sub"}, nil, "git shadow"},
		{"hooksPath target", nil, []string{".husky"}, "git shadow"},
		{"inside hooksPath target", []string{".husky/pre-commit"}, nil, "git shadow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Resolve(top, c.hide, c.box, reserved)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestResolveCaseInsensitive: on a case-insensitive file system a configured spelling resolves
// to the on-disk name, the one the guest mounts over; a case variant of .git is refused, and a
// symlink reached by another spelling is still a symlink.
func TestResolveCaseInsensitive(t *testing.T) {
	top := casefstest.Dir(t)
	if err := os.MkdirAll(filepath.Join(top, "Secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "Secrets/Key.TXT"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(top, "Out")); err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(top, []string{"secrets/key.txt"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Hide[0].Rel; got != "Secrets/Key.TXT" {
		t.Fatalf("resolved %q, want the on-disk spelling Secrets/Key.TXT", got)
	}
	if _, err := Resolve(top, []string{"out/passwd"}, nil, nil); err == nil || !strings.Contains(err.Error(), "leads out") {
		t.Fatalf("symlink by another spelling: %v", err)
	}
	if _, err := Resolve(top, []string{"secrets", "SECRETS/KEY.txt"}, nil, nil); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Fatalf("case-variant overlap: %v", err)
	}
}
