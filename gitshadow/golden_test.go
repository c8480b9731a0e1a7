package gitshadow

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// updateGolden rewrites testdata/golden/*.plan from the current code. Run it only when a change
// of the plan is intended, and say why in the commit: these files pin what the shadow protects.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden/*.plan")

// TestPlanGolden pins the whole plan (every git dir, shadow, kind, ConfigRef, warning) and the
// boot script rendered from it for the fixture repositories and for many.sh with 40 submodules,
// so that an optimisation of discovery or rendering that drops, adds or changes one protected
// path fails here. The fixture's config names paths through every kind of key discovery
// follows: a global core.hooksPath, an includeIf that does not hold now, an include from a
// nested submodule's config, a relative core.fsmonitor, a ! alias and a filter driver; its .gitmodules names a path outside the work tree (a warning).
func TestPlanGolden(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	run(t, work, "git", "config", "--global", "core.hooksPath", ".githooks")
	run(t, work, "git", "config", "includeIf.onbranch:not-now.path", "../cond.gitconfig")
	run(t, work, "git", "-C", "a/b", "config", "include.path", "../../../../../b.gitconfig")
	run(t, work, "git", "config", "core.fsmonitor", "scripts/fsmonitor --fast")
	run(t, work, "git", "config", "alias.st", "!tools/st.sh status")
	run(t, work, "git", "-C", "a", "config", "filter.lfs.clean", "./bin/clean %f")
	run(t, work, "git", "config", "-f", ".gitmodules", "submodule.evil.path", "../../etc")
	script, _ := filepath.Abs("testdata/many.sh")
	run(t, root, "sh", "-eu", script, "40", filepath.Join(root, "many"))
	for _, c := range []struct{ name, dir string }{
		{"work", work},
		{"worktree", filepath.Join(root, "wt")},
		{"many40", filepath.Join(root, "many/top")},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := renderGolden(t, discover(t, c.dir), root)
			path := filepath.Join("testdata/golden", c.name+".plan")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden plan: %v (rewrite with go test -run TestPlanGolden -update-golden)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("plan of %s differs from %s:\n%s", c.name, path, firstDiff(string(got), string(want)))
			}
		})
	}
}

// renderGolden is the plan as JSON followed by its boot script, with the fixture's temporary
// root replaced by /ROOT so that the text is the same on every run.
func renderGolden(t *testing.T, plan *Plan, root string) []byte {
	t.Helper()
	js, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	boot, err := plan.BootScript()
	if err != nil {
		t.Fatal(err)
	}
	text := string(js) + "\n---- boot script\n" + boot
	return []byte(strings.ReplaceAll(text, root, "/ROOT"))
}

// firstDiff shows the first line where got and want differ, with its number.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return sprintf("line %d:\n got: %q\nwant: %q\n(%d lines, want %d)", i+1, gl, wl, len(g), len(w))
		}
	}
	return "same lines"
}
