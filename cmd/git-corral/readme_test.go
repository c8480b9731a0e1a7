package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/project"
)

// readmeTOMLFile matches the comment that opens each part of a README config block and names the
// file the part belongs in.
var readmeTOMLFile = regexp.MustCompile(`^# (\.corral\.toml|\$CORRAL_HOME/projects/BOX\.toml|\$CORRAL_HOME/config\.toml)\b`)

// readmeHomeMount matches a mounts entry's host path under ~ in a README config block.
var readmeHomeMount = regexp.MustCompile(`"~/([^":]+):`)

// readmeConfigParts returns the README's ```toml blocks split by the file each part names.
func readmeConfigParts(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]string{}
	in, file := false, ""
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case !in && l == "```toml":
			in, file = true, ""
		case in && l == "```":
			in = false
		case in:
			if m := readmeTOMLFile.FindStringSubmatch(l); m != nil {
				file = m[1]
				continue
			}
			if file == "" && strings.TrimSpace(l) != "" {
				t.Fatalf("README.md:%d: a config line before any comment naming its file: %q", i+1, l)
			}
			parts[file] += l + "\n"
		}
	}
	if len(parts) == 0 {
		t.Fatal("README.md has no ```toml block")
	}
	return parts
}

// TestReadmeConfigBlocks: every config block in the README is accepted by 'git corral config
// check' in the file its comment names (issue #30: the README's own mounts example was refused).
// The control: the same check refuses the README's trusted part placed in .corral.toml, where a
// repository may not widen, so a check that accepts anything cannot pass this test.
func TestReadmeConfigBlocks(t *testing.T) {
	parts := readmeConfigParts(t)
	check := func(t *testing.T, files map[string]string) (int, string) {
		t.Helper()
		home := t.TempDir()
		top := filepath.Join(home, "src", "readme")
		if err := os.MkdirAll(top, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "init", "-q", top).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		real, err := filepath.EvalSymlinks(top)
		if err != nil {
			t.Fatal(err)
		}
		// The host directories the examples mount (~/PATH) exist, as they would for a user
		// who writes the example.
		for _, body := range files {
			for _, m := range readmeHomeMount.FindAllStringSubmatch(body, -1) {
				if err := os.MkdirAll(filepath.Join(home, m[1]), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		corralHome := filepath.Join(home, ".corral")
		box := project.BoxName(real)
		for name, body := range files {
			path := filepath.Join(top, name)
			switch name {
			case "$CORRAL_HOME/projects/BOX.toml":
				path = filepath.Join(corralHome, "projects", box+".toml")
			case "$CORRAL_HOME/config.toml":
				path = filepath.Join(corralHome, "config.toml")
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		env := map[string]string{"HOME": home, "CORRAL_HOME": corralHome, "GIT_CONFIG_NOSYSTEM": "1",
			"GIT_CONFIG_GLOBAL": filepath.Join(home, ".gitconfig"), "NO_COLOR": "1", "TERM": "dumb"}
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			return os.Getenv(k)
		}}
		code := a.main(context.Background(), []string{"-C", top, "config", "check"})
		return code, out.String() + errb.String()
	}
	if code, out := check(t, parts); code != 0 {
		t.Fatalf("config check of the README's config blocks: exit %d\n%s\nblocks: %q", code, out, parts)
	}
	trusted := parts["$CORRAL_HOME/projects/BOX.toml"]
	if trusted == "" {
		t.Fatal("the README shows no trusted ($CORRAL_HOME/projects/BOX.toml) part: the control has nothing to move")
	}
	if code, out := check(t, map[string]string{".corral.toml": trusted}); code == 0 {
		t.Fatalf("control: config check accepts the README's trusted keys in .corral.toml:\n%s", out)
	}
}
