package agents

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCatalogue: every agent has an exact default version, a program inside its package,
// auth variables, state paths that stay in the home directory and API hosts.
func TestCatalogue(t *testing.T) {
	envRE := regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	for _, want := range []string{"claude", "codex", "gemini"} {
		if _, err := Lookup(want); err != nil {
			t.Errorf("%s missing: %v", want, err)
		}
	}
	for _, a := range Catalogue() {
		if validVersion(a.DefaultVersion) != nil || !releaseRE.MatchString(a.DefaultVersion) {
			t.Errorf("%s: default version %q is not an exact release", a.Name, a.DefaultVersion)
		}
		if err := shellWord("program", a.Program(LinuxX64)); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
		if len(a.AuthEnv) == 0 || len(a.StateDirs) == 0 || len(a.APIHosts) == 0 {
			t.Errorf("%s: auth, state or API hosts missing", a.Name)
		}
		for _, e := range a.AuthEnv {
			if !envRE.MatchString(e) {
				t.Errorf("%s: auth variable %q", a.Name, e)
			}
		}
		seen := map[string]bool{}
		for _, p := range a.StatePaths() {
			d := p.Rel
			if path.IsAbs(d) || path.Clean(d) != d || strings.HasPrefix(d, "..") {
				t.Errorf("%s: state path %q leaves the home directory", a.Name, d)
			}
			if seen[d] {
				t.Errorf("%s: state path %q listed twice (a directory and a file?)", a.Name, d)
			}
			seen[d] = true
		}
	}
	if _, err := Lookup("cursor"); err == nil || !strings.Contains(err.Error(), "claude, codex, gemini") {
		t.Errorf("unknown agent error does not list the catalogue: %v", err)
	}
}

// TestStateKinds: the catalogue says which state path is a file and which a directory, and
// StatePaths hands both on with their kind (the box side no longer guesses from a dot).
func TestStateKinds(t *testing.T) {
	claude, _ := Lookup("claude")
	want := []StatePath{{Rel: ".claude", Dir: true}, {Rel: ".claude.json"}}
	if got := claude.StatePaths(); !slices.Equal(got, want) {
		t.Errorf("claude state paths = %v, want %v", got, want)
	}
	codex, _ := Lookup("codex")
	if got := codex.StatePaths(); !slices.Equal(got, []StatePath{{Rel: ".codex", Dir: true}}) {
		t.Errorf("codex state paths = %v", got)
	}
	// A directory name with a dot in it is still a directory, a file without one a file.
	a := Agent{StateDirs: []string{".config/x.d"}, StateFiles: []string{".xrc"}}
	if got := a.StatePaths(); !slices.Equal(got, []StatePath{{Rel: ".config/x.d", Dir: true}, {Rel: ".xrc"}}) {
		t.Errorf("state paths = %v", got)
	}
	c := Catalogue()[0]
	c.StateFiles[0] = "changed"
	if again, _ := Lookup(c.Name); again.StateFiles[0] == "changed" {
		t.Error("Catalogue shares StateFiles with the table")
	}
}

func TestPlatformRules(t *testing.T) {
	claude, _ := Lookup("claude")
	codex, _ := Lookup("codex")
	gemini, _ := Lookup("gemini")
	if s, as, ok := claude.PlatformSpec("2.1.332", LinuxArm64); !ok || s.String() != "@anthropic-ai/claude-code-linux-arm64@2.1.332" || as != s.Package {
		t.Errorf("claude platform = %v %q", s, as)
	}
	if s, as, ok := codex.PlatformSpec("0.171.0", LinuxX64); !ok || s.String() != "@openai/codex@0.171.0-linux-x64" || as != "@openai/codex-linux-x64" {
		t.Errorf("codex platform = %v %q", s, as)
	}
	if _, _, ok := gemini.PlatformSpec("0.61.0", LinuxX64); ok {
		t.Error("gemini has no platform package")
	}
	if got := claude.Program(LinuxX64); got != "node_modules/@anthropic-ai/claude-code-linux-x64/claude" {
		t.Errorf("claude runs %q", got)
	}
	for arch, want := range map[string]Platform{"x86_64": LinuxX64, "aarch64": LinuxArm64, "arm64": LinuxArm64} {
		if p, err := PlatformForArch(arch); err != nil || p != want {
			t.Errorf("PlatformForArch(%q) = %q, %v", arch, p, err)
		}
	}
	if _, err := PlatformForArch("riscv64"); err == nil {
		t.Error("riscv64 accepted")
	}
}
