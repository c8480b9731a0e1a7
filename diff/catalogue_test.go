package diff

import (
	"strings"
	"testing"
)

func TestCatalogueMatch(t *testing.T) {
	for _, tc := range []struct {
		path, group string // group "" means no match
	}{
		{"Makefile", "make"}, {"sub/dir/Makefile", "make"}, {"MAKEFILE", "make"}, {"GNUmakefile", "make"},
		{"rules.mk", "make"}, {"package.json", "node"}, {"web/package.json", "node"},
		{".yarn/releases/yarn-4.js", "node"}, {".cargo/config.toml", "rust"}, {"a/b/.cargo/config", "rust"},
		{"gradle/wrapper/gradle-wrapper.properties", "jvm"}, {"app/build.gradle.kts", "jvm"},
		{".github/workflows/ci.yml", "ci"}, {".GITHUB/Workflows/x.yaml", "ci"},
		{".vscode/tasks.json", "editor"}, {".vscode/extensions.json", "editor"}, {"my.code-workspace", "editor"},
		{".devcontainer/python/devcontainer.json", "editor"}, {".idea/runConfigurations/a.xml", "editor"},
		{".claude/settings.json", "agent"}, {".claude/commands/x.md", "agent"}, {".mcp.json", "agent"},
		{".husky/_/husky.sh", "hooks"}, {".envrc", "entry"}, {"deep/.envrc", "entry"}, {".tool-versions", "entry"},
		{".gitattributes", "git"}, {"vendor/x/.gitattributes", "git"}, {".lfsconfig", "git"},
		{"Dockerfile.dev", "container"}, {"api.Dockerfile", "container"}, {"compose.override.yaml", "container"},
		{"requirements-dev.txt", "python"}, {"pkg/conftest.py", "python"}, {"lib/site.pth", "python"},
		{"Makefile", "make"}, {"src/main.go", ""}, {"README.md", ""}, {"docs/makefile.md", ""}, {"github/workflows/ci.yml", ""},
		{"x.json", ""}, {"vscode/tasks.json", ""},
	} {
		r := Match(tc.path)
		got := ""
		if r != nil {
			got = r.Group
		}
		if got != tc.group {
			t.Errorf("Match(%q) = group %q, want %q", tc.path, got, tc.group)
		}
	}
}

// TestCatalogueRows keeps every row complete and reachable: a pattern no earlier row swallows
// for at least one concrete path, a known severity and group, and a reason.
func TestCatalogueRows(t *testing.T) {
	seen := map[string]bool{}
	for i := range Catalogue() {
		r := &Catalogue()[i]
		if r.Why == "" || r.Group == "" || (r.Severity != High && r.Severity != Medium && r.Severity != Low) {
			t.Errorf("row %q is incomplete: %+v", r.Pattern, *r)
		}
		if seen[r.Pattern] {
			t.Errorf("row %q is duplicated", r.Pattern)
		}
		seen[r.Pattern] = true
		example := strings.NewReplacer("**", "a/b", "*", "x").Replace(r.Pattern)
		if !matchPattern(r.Pattern, example) {
			t.Errorf("row %q does not match its own example %q", r.Pattern, example)
		}
		if got := Match(example); got == nil {
			t.Errorf("Match(%q) = nil for row %q", example, r.Pattern)
		}
		if !strings.Contains(r.Pattern, "*") && Match(r.Pattern) != r {
			t.Errorf("row %q is shadowed by row %q", r.Pattern, Match(r.Pattern).Pattern)
		}
	}
}

func TestMatchExtra(t *testing.T) {
	extra := []string{".husky", "tools/hook.sh", "../outside", ""}
	for p, want := range map[string]bool{
		".husky/pre-commit": true, ".HUSKY/x": true, ".huskyx": false, "tools/hook.sh": true,
		"tools/hook.shx": false, "outside": true, "README.md": false,
	} {
		if _, got := matchExtra(extra, p); got != want {
			t.Errorf("matchExtra(%q) = %v, want %v", p, got, want)
		}
	}
}
