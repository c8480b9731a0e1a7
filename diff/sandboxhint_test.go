package diff

import (
	"bytes"
	"strings"
	"testing"
)

// TestSandboxHint: each changed script the host runs directly gets the command that tries it
// under git corral sandbox; make, configuration files and deletions get none; a hostile path is
// one quoted word or no hint at all.
func TestSandboxHint(t *testing.T) {
	run := "git corral sandbox --manifest FILE -- "
	cases := []struct {
		name string
		f    Finding
		want string
	}{
		{"envrc", Finding{Group: "entry", Path: ".envrc", Status: "added"}, run + "bash './.envrc'"},
		{"nested envrc", Finding{Group: "entry", Path: "sub/.envrc", Status: "modified"}, run + "bash './sub/.envrc'"},
		{"git hook", Finding{Group: "git", Path: ".git/hooks/pre-commit", Status: "modified"}, run + "sh './.git/hooks/pre-commit'"},
		{"husky hook", Finding{Group: "hooks", Path: ".husky/pre-push", Status: "added"}, run + "sh './.husky/pre-push'"},
		{"nested husky", Finding{Group: "hooks", Path: "web/.husky/pre-push", Status: "added"}, run + "sh './web/.husky/pre-push'"},
		{"case variant hook", Finding{Group: "hooks", Path: ".GitHooks/post-checkout", Status: "added"}, run + "sh './.GitHooks/post-checkout'"},
		{"package.json", Finding{Group: "node", Path: "package.json", Status: "modified"}, run + "npm run SCRIPT"},
		{"nested package.json", Finding{Group: "node", Path: "app/package.json", Status: "modified"}, run + "npm --prefix './app' run SCRIPT"},
		{"configure", Finding{Group: "make", Path: "configure", Status: "modified"}, run + "sh './configure'"},
		{"script", Finding{Group: "ci", Path: "scripts/build.sh", Status: "modeChanged"}, run + "sh './scripts/build.sh'"},
		{"python", Finding{Group: "python", Path: "setup.py", Status: "modified"}, run + "python3 './setup.py'"},
		{"new executable", Finding{Group: "filesystem", Path: "tools/run", Status: "added", Reason: "a new executable file"}, run + "'./tools/run'"},
		{"exec bit", Finding{Group: "filesystem", Path: "tools/run", Status: "modeChanged", Reason: "the execute bit was set"}, run + "'./tools/run'"},
		// No hint.
		{"makefile", Finding{Group: "make", Path: "Makefile", Status: "modified"}, ""},
		{"mk", Finding{Group: "make", Path: "rules.mk", Status: "added"}, ""},
		{"make shadow script", Finding{Group: "make", Path: "GNUmakefile.sh", Status: "added"}, ""},
		{"deleted", Finding{Group: "entry", Path: ".envrc", Status: "deleted"}, ""},
		{"config read by a tool", Finding{Group: "editor", Path: ".vscode/tasks.json", Status: "modified"}, ""},
		{"symlink", Finding{Group: "filesystem", Path: "x", Status: "added", Reason: "a symlink to outside the repository (never followed)"}, ""},
		// Hostile paths.
		{"quote", Finding{Group: "hooks", Path: ".husky/a'; rm -rf ~; '", Status: "added"}, run + `sh './.husky/a'\''; rm -rf ~; '\'''`},
		{"dash", Finding{Group: "entry", Path: "-c/.envrc", Status: "added"}, run + "bash './-c/.envrc'"},
		{"newline", Finding{Group: "hooks", Path: ".husky/a\nrm -rf ~", Status: "added"}, ""},
		{"newline dir", Finding{Group: "node", Path: "a\nb/package.json", Status: "added"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SandboxHint(tc.f); got != tc.want {
				t.Errorf("SandboxHint = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWriteTextSandboxHint: the text output carries the hint under the finding, once per path,
// escaped, with the note on the manifest once; without a hinted finding, neither appears.
func TestWriteTextSandboxHint(t *testing.T) {
	r := &Report{Base: BaseInfo{Kind: "revision", Ref: "HEAD"}, Findings: []Finding{
		{Severity: High, Group: "entry", Path: ".envrc", Status: "added", Reason: "direnv runs it"},
		{Severity: High, Group: "filesystem", Path: ".envrc", Status: "added", Reason: "a new executable file"},
		{Severity: High, Group: "hooks", Path: ".husky/\x1b[2Jx", Status: "added", Reason: "hook"},
		{Severity: High, Group: "make", Path: "Makefile", Status: "modified", Reason: "make runs its recipes"},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "try it fenced first: git corral sandbox --manifest FILE -- bash './.envrc'"); n != 1 {
		t.Errorf("the .envrc hint appears %d times, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, `sh './.husky/\x1b[2Jx'`) || strings.Contains(out, "\x1b") {
		t.Errorf("the hook's hint is missing or not escaped:\n%q", out)
	}
	if strings.Count(out, "try it fenced first") != 2 || strings.Count(out, SandboxManifestNote) != 1 {
		t.Errorf("want two hints (none for Makefile) and one note:\n%s", out)
	}
	r.Findings = r.Findings[3:]
	b.Reset()
	if err := WriteText(&b, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "fenced") || strings.Contains(out, SandboxManifestNote) {
		t.Errorf("a Makefile change alone got a hint:\n%s", out)
	}
}
