package cover

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo runs a script of git commands in a new repository with a fixed identity and date.
func gitRepo(t *testing.T, script string) string {
	t.Helper()
	top := t.TempDir()
	home := t.TempDir()
	cmd := exec.Command("sh", "-ec", "git init -q -b main .\n"+script)
	cmd.Dir = top
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "gitconfig"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t.invalid",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fixture: %v\n%s", err, out)
	}
	return top
}

// TestCheckClone: clone mode delivers every branch's and tag's history and the index, so a
// hidden path anywhere there is refused; the first case, the same path only untracked, is the
// control.
func TestCheckClone(t *testing.T) {
	base := "mkdir -p secrets config && echo k >secrets/key && echo o >config/other && git add config && git commit -qm base\n"
	cases := []struct {
		name, script string
		hide         []string
		want         string
	}{
		{"untracked only (control)", base, []string{"secrets", "config/token"}, ""},
		{"at HEAD", base + "git add -f secrets && git commit -qm s\n", []string{"secrets"}, "is in commit"},
		{"file at HEAD", base + "echo t >config/token && git add config/token && git commit -qm t\n", []string{"config/token"}, "is in commit"},
		{"removed since, still in history", base + "git add secrets && git commit -qm s && git rm -rq secrets && git commit -qm rm\n", []string{"secrets"}, "is in commit"},
		{"on another branch", base + "git checkout -qb side && git add secrets && git commit -qm s && git checkout -q main\n", []string{"secrets"}, "is in commit"},
		{"only under an annotated tag", base + "git checkout -qb side && git add secrets && git commit -qm s && git tag -a -m t v1 && git checkout -q main && git branch -D -q side\n", []string{"secrets"}, "is in commit"},
		{"staged, not committed", base + "git add secrets/key\n", []string{"secrets"}, "tracked in the index"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := gitRepo(t, c.script)
			err := CheckClone(top, c.hide)
			if c.want == "" {
				if err != nil {
					t.Fatalf("control refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrHiddenTracked) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrHiddenTracked with %q", err, c.want)
			}
		})
	}
}
