package gitshadow

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellQuote proves every quoted word reaches sh as exactly one argument, byte for byte, and
// that a newline, carriage return or NUL (which could smuggle a second command into a script a
// human reviews line by line) is refused.
func TestShellQuote(t *testing.T) {
	good := []string{"/a/b", "/with space/x", "/it's", `/"dq"`, "/$(touch /tmp/x)", "/`id`", "/a;b|c&d",
		"/*?[]", "/-rf", "/ünï\u202ecode", `/back\slash`, "/'", "''", "~root", "/\t tab"}
	for _, s := range good {
		q, err := ShellQuote(s)
		if err != nil {
			t.Fatalf("ShellQuote(%q): %v", s, err)
		}
		out, err := exec.Command("sh", "-c", `printf '%s' `+q).Output()
		if err != nil {
			t.Fatalf("sh with %s: %v", q, err)
		}
		if string(out) != s {
			t.Errorf("ShellQuote(%q) = %s reaches sh as %q", s, q, out)
		}
		n, _ := exec.Command("sh", "-c", `set -- `+q+`; echo $#`).Output()
		if strings.TrimSpace(string(n)) != "1" {
			t.Errorf("ShellQuote(%q) = %s is %s words", s, q, n)
		}
	}
	for _, s := range []string{"", "/a\nb", "/a\rb", "/a\x00b", "/x\n; touch /tmp/pwned"} {
		if _, err := ShellQuote(s); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("ShellQuote(%q) = %v, want ErrUnsafePath", s, err)
		}
	}
}

// TestGuestScriptRefusesUnsafePaths checks that a plan holding a path with a newline renders no
// script at all (rather than a script missing that shadow).
func TestGuestScriptRefusesUnsafePaths(t *testing.T) {
	for _, p := range []string{"/r/.git\n/x", "/r/.git\x00", "/r/\r.git"} {
		plan := &Plan{GitDirs: []GitDir{{Path: "/r/.git", Shadows: []Shadow{
			{Path: "/r/.git", Kind: Pin, Dir: true, Exists: true},
			{Path: p, Kind: ReadOnly, Exists: true},
		}}}}
		if s, err := plan.GuestScript(); !errors.Is(err, ErrUnsafePath) || s != "" {
			t.Errorf("GuestScript with %q: %v, script %d bytes", p, err, len(s))
		}
		if s, err := plan.GuardChecks(); !errors.Is(err, ErrUnsafePath) || s != "" {
			t.Errorf("GuardChecks with %q: %v, script %d bytes", p, err, len(s))
		}
	}
}

// TestScriptsShellcheckClean renders both scripts for the fixture (paths with spaces and
// quotes added) and runs shellcheck on them.
func TestScriptsShellcheckClean(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck not installed (scripts/setup.sh installs it)")
	}
	root := fixture(t)
	plan := discover(t, filepath.Join(root, "work"))
	plan.Extra = append(plan.Extra, Shadow{Path: "/odd path/it's $(x)/`y`", Kind: ReadOnly, Exists: true})
	for name, render := range map[string]func() (string, error){"guest": plan.GuestScript, "guard": plan.GuardChecks} {
		s, err := render()
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), name+".sh")
		os.WriteFile(f, []byte(s), 0o644)
		if out, err := exec.Command(sc, "-s", "sh", f).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s script: %v\n%s", name, err, out)
		}
	}
}

// TestGuestScriptOrder checks that every pin comes before any mount inside it, so that a pin
// never hides a shadow made earlier.
func TestGuestScriptOrder(t *testing.T) {
	root := fixture(t)
	plan := discover(t, filepath.Join(root, "work"))
	exps := plan.Expectations()
	for i, e := range exps {
		for _, later := range exps[i+1:] {
			if later.Kind == Pin && later.Path != e.Path && inside(e.Path, later.Path) {
				t.Errorf("%s %s is mounted before the pin of its parent %s", e.Kind, e.Path, later.Path)
			}
		}
	}
	if len(exps) < 20 {
		t.Errorf("only %d expectations for the fixture", len(exps))
	}
}
