package cover

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBootScriptShellcheck: the rendered script passes shellcheck at style level, with paths
// holding a quote, a space and a dollar sign, each reaching the script as one quoted word.
func TestBootScriptShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck is not installed (scripts/setup.sh installs it)")
	}
	p := &Plan{TopLevel: "/home/u/it's a $repo", Hide: []Entry{{Key: KeyHide, Rel: "a b/$(touch x)"}, {Key: KeyHide, Rel: "c'd"}},
		BoxDirs: []Entry{{Key: KeyBoxDirs, Rel: "node_modules"}}}
	s, err := p.BootScript("corral")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`pin '/home/u/it'\''s a $repo/a b'`, `hide '/home/u/it'\''s a $repo/a b/$(touch x)'`, `box_dir '/home/u/it'\''s a $repo/node_modules' ` + BoxDirName("node_modules")} {
		if !strings.Contains(s, want+"\n") {
			t.Errorf("script lacks the line %q:\n%s", want, s)
		}
	}
	f := filepath.Join(t.TempDir(), "45-cover.sh")
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("shellcheck", "-s", "sh", "-S", "style", f).CombinedOutput(); err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
}

// TestBootScriptRefuses: a value that cannot be one script line is refused, never rendered.
func TestBootScriptRefuses(t *testing.T) {
	for name, p := range map[string]struct {
		plan *Plan
		user string
	}{
		"newline in a path":  {&Plan{TopLevel: "/p", Hide: []Entry{{Key: KeyHide, Rel: "a\nrm -rf /"}}}, "corral"},
		"relative top level": {&Plan{TopLevel: "p"}, "corral"},
		"user with newline":  {&Plan{TopLevel: "/p"}, "corral\nroot"},
		"user with dash":     {&Plan{TopLevel: "/p"}, "-u"},
	} {
		if s, err := p.plan.BootScript(p.user); err == nil {
			t.Errorf("%s: rendered\n%s", name, s)
		}
	}
}

// TestHelperScriptQuotes: a project directory holding a quote, a backslash and a dollar sign
// reaches the helper as itself (the helper names it when refusing a path outside it), and one
// holding a newline is refused.
func TestHelperScriptQuotes(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Fatalf("perl is needed: %v", err)
	}
	top := `/home/u/it's a \ $repo @x`
	h, err := HelperScript(top)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "cover-hide")
	if err := os.WriteFile(f, []byte(h), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("perl", f, "/elsewhere/x").CombinedOutput()
	if want := "cover: /elsewhere/x: not a clean path under " + top + "\n"; err == nil || string(out) != want {
		t.Errorf("helper outside its top level: %v, %q; want a refusal %q", err, out, want)
	}
	if _, err := HelperScript("/p\nq"); err == nil {
		t.Errorf("a project directory with a newline was rendered")
	}
}
