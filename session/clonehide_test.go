package session

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/cover"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/vm"
)

// TestOpenCloneDirHide: the box of a `git corral clone URL` directory is refused, before the
// audit start record and before limactl is looked for, when a hide path is anywhere in the
// history its clone store delivers: the tip of a branch, a commit deleted since, another
// branch, a tag alone, a directory entry covering a nested file. Controls: no hide, and a
// hide path the history never held, get past the check (the start is audited and the run
// stops only at the missing limactl). A missing store with hide set is refused (fail closed);
// without hide it is not.
func TestOpenCloneDirHide(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to build the clone store")
	}
	cases := []struct {
		label, hide string
		build       func(t *testing.T, work string)
		refused     bool
	}{
		{"no hide (control)", "", storeWithSecretAtTip, false},
		{"hide not in history (control)", `hide = ["absent.txt"]`, storeWithSecretAtTip, false},
		{"secret at the tip", `hide = ["secret.txt"]`, storeWithSecretAtTip, true},
		{"secret deleted since", `hide = ["secret.txt"]`, storeWithSecretDeleted, true},
		{"secret on another branch", `hide = ["keys/"]`, storeWithKeysOnBranch, true},
		{"secret in a tag only", `hide = ["secret.txt"]`, storeWithSecretInTagOnly, true},
		{"no store, hide set", `hide = ["secret.txt"]`, nil, true},
		{"no store, no hide (control)", "", nil, false},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			h, req := cloneDirRequest(t)
			if c.build != nil {
				work := filepath.Join(t.TempDir(), "work")
				c.build(t, work)
				gitT(t, "", "clone", "-q", "--bare", "--no-local", work, h.CloneStore(req.Box))
			}
			if c.hide != "" {
				must(t, os.WriteFile(h.ProjectConfig(req.Box), []byte(c.hide+"\n"), 0o600))
			}
			_, err := OpenClone(context.Background(), req)
			_, logErr := os.Stat(h.SessionsLog())
			if c.refused {
				if err == nil || !strings.Contains(err.Error(), "hide") || logErr == nil {
					t.Fatalf("OpenClone: %v (sessions log: %v); want a refusal naming hide before the start is audited", err, logErr)
				}
				if c.build != nil && !errors.Is(err, cover.ErrHiddenTracked) {
					t.Fatalf("OpenClone: %v; want %v", err, cover.ErrHiddenTracked)
				}
				return
			}
			if !errors.Is(err, vm.ErrNoLimactl) || logErr != nil {
				t.Fatalf("OpenClone: %v (sessions log: %v); want past the hide check, audited, stopped at the missing limactl", err, logErr)
			}
		})
	}
}

// cloneDirRequest is a clone directory (holding nothing but what clone writes) and the
// request start makes for it, in a home of its own; limactl can never be found.
func cloneDirRequest(t *testing.T) (home.Home, CloneRequest) {
	h := home.Home{Dir: t.TempDir()}
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Dir(h.ProjectConfig("x")), 0o700))
	must(t, os.MkdirAll(filepath.Dir(h.CloneStore("x")), 0o700))
	env := map[string]string{"CORRAL_HOME": h.Dir, "HOME": t.TempDir(), "CORRAL_LIMACTL": filepath.Join(dir, "no-limactl")}
	getenv := func(k string) string { return env[k] }
	req := CloneRequest{Request: Request{Cmd: "start", Dir: dir, Getenv: getenv, UI: UI{}}, Box: "clone-abc123", HostDir: dir, Create: true}
	return h, req
}

// gitT runs git in dir with a fixed identity and dates and no user or system configuration.
func gitT(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// commitFiles writes files (path: content; "" removes it) in work and commits them.
func commitFiles(t *testing.T, work, msg string, files map[string]string) {
	for p, text := range files {
		full := filepath.Join(work, p)
		if text == "" {
			must(t, os.Remove(full))
			continue
		}
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(text), 0o644))
	}
	gitT(t, work, "add", "-A")
	gitT(t, work, "commit", "-q", "-m", msg)
}

func newWork(t *testing.T, work string) {
	gitT(t, "", "init", "-q", "-b", "main", work)
	commitFiles(t, work, "readme", map[string]string{"README": "hello\n"})
}

func storeWithSecretAtTip(t *testing.T, work string) {
	newWork(t, work)
	commitFiles(t, work, "secret", map[string]string{"secret.txt": "s3cret\n"})
}

func storeWithSecretDeleted(t *testing.T, work string) {
	storeWithSecretAtTip(t, work)
	commitFiles(t, work, "forget", map[string]string{"secret.txt": ""})
}

func storeWithKeysOnBranch(t *testing.T, work string) {
	newWork(t, work)
	gitT(t, work, "checkout", "-q", "-b", "keys")
	commitFiles(t, work, "key", map[string]string{"keys/id": "key\n"})
	gitT(t, work, "checkout", "-q", "main")
}

func storeWithSecretInTagOnly(t *testing.T, work string) {
	newWork(t, work)
	gitT(t, work, "checkout", "-q", "--detach")
	commitFiles(t, work, "secret", map[string]string{"secret.txt": "s3cret\n"})
	gitT(t, work, "tag", "-a", "-m", "v1", "v1")
	gitT(t, work, "checkout", "-q", "main")
}
