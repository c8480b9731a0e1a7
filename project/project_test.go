package project

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitT runs real git in dir with a hermetic configuration.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestFind: a checkout is found by real git from its top level, a subdirectory and through a
// symlink, always with the same real top level and box; a linked worktree is its own box with
// the main repository's common dir; a bare repository and a plain directory are refused with
// the errors main turns into exit 128.
func TestFind(t *testing.T) {
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	top := filepath.Join(root, "My Repo")
	os.MkdirAll(filepath.Join(top, "sub", "dir"), 0o755)
	gitT(t, top, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(top, "f"), []byte("x"), 0o644)
	gitT(t, top, "add", "f")
	gitT(t, top, "commit", "-qm", "init")
	os.Symlink(top, filepath.Join(root, "link"))

	var first *Project
	for _, dir := range []string{top, filepath.Join(top, "sub", "dir"), filepath.Join(root, "link"), filepath.Join(root, "link", "sub")} {
		p, err := Find(ctx, dir)
		if err != nil {
			t.Fatalf("Find(%s): %v", dir, err)
		}
		if p.TopLevel != top || p.GitDir != filepath.Join(top, ".git") || p.CommonDir != p.GitDir || p.Linked() {
			t.Errorf("Find(%s) = %+v", dir, p)
		}
		if first == nil {
			first = p
		} else if p.Box != first.Box {
			t.Errorf("Find(%s) gives box %s, the top level gave %s", dir, p.Box, first.Box)
		}
	}
	if !regexp.MustCompile(`^my-repo-[0-9a-f]{6}$`).MatchString(first.Box) {
		t.Errorf("box %q: want the slug and 6 hex digits", first.Box)
	}

	wt := filepath.Join(root, "wt")
	gitT(t, top, "worktree", "add", "-q", wt)
	p, err := Find(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Linked() || p.CommonDir != filepath.Join(top, ".git") || p.Box == first.Box || p.TopLevel != wt {
		t.Errorf("linked worktree %+v: want its own box and top level, the main repository's common dir", p)
	}

	bare := filepath.Join(root, "bare.git")
	gitT(t, root, "init", "-q", "--bare", bare)
	if _, err := Find(ctx, bare); !errors.Is(err, ErrBare) {
		t.Errorf("Find(bare) = %v, want ErrBare", err)
	}
	plain := filepath.Join(root, "plain")
	os.Mkdir(plain, 0o755)
	if _, err := Find(ctx, plain); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Find(plain dir) = %v, want ErrNotRepository", err)
	}
}

// TestBoxName: the name is a valid Lima instance name of bounded length, differs for two paths
// with the same base name, and is stable.
func TestBoxName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?-[0-9a-f]{6}$`)
	for _, p := range []string{"/a/repo", "/b/repo", "/x/Ünïcode Name!", "/x/" + strings.Repeat("long", 30), "/x/--", "/x/.git", "/x/a\nb"} {
		n := BoxName(p)
		if len(n) > maxSlug+7 {
			t.Errorf("BoxName(%q) = %q is longer than %d", p, n, maxSlug+7)
		}
		if !valid.MatchString(n) && !regexp.MustCompile(`^[a-z0-9-]*[0-9a-f]{6}$`).MatchString(n) {
			t.Errorf("BoxName(%q) = %q is not a plain instance name", p, n)
		}
		if BoxName(p) != n {
			t.Errorf("BoxName(%q) is not stable", p)
		}
	}
	if BoxName("/a/repo") == BoxName("/b/repo") {
		t.Error("two repositories called repo share a box")
	}
}

// TestParseRevParse: git's answers are parsed strictly; anything unexpected is refused.
func TestParseRevParse(t *testing.T) {
	for _, out := range []string{"", "false\n", "false\n\n/g\n/g\n", "maybe\n/t\n/g\n/g\n", "false\n/t\n/g\n/g\nextra\n"} {
		if _, err := parseRevParse(out); !errors.Is(err, ErrNotRepository) {
			t.Errorf("parseRevParse(%q) = %v, want ErrNotRepository", out, err)
		}
	}
	if _, err := parseRevParse("true\n"); !errors.Is(err, ErrBare) {
		t.Errorf("bare: %v", err)
	}
}
