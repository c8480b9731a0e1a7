package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/project"
)

// gitID is a fixed identity for commits made by the tests, on the host and in the box.
var gitID = []string{"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=T",
	"GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z"}

// cloneCase makes a directory owned by the test user for one clone scenario.
func cloneCase(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(e2eBase, "projects", name)
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chown(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// sh runs a shell script as the test user and fails the test on a non-zero exit.
func sh(t *testing.T, script string, env ...string) result {
	t.Helper()
	r := runCmd(t, asUser([]string{"sh", "-c", script}, append(env, gitID...)...), "sh "+script)
	if r.code != 0 {
		t.Fatalf("sh %q: exit %d: %s", script, r.code, r.stderr)
	}
	return r
}

// TestCloneBox is the clone group: one box, made by "git corral clone" of a local repository
// with an untracked .env; a commit in the box comes back with fetch and shows in diff; the host
// never has a work tree and the .env never reaches the box.
func TestCloneBox(t *testing.T) {
	base := cloneCase(t, "clonebox")
	src, dest := filepath.Join(base, "src"), filepath.Join(base, "dest")
	sh(t, "git init -q -b main "+src+" && cd "+src+" && echo hello > README && git add README && git commit -qm init && echo SECRET-CORRAL-E2E=1 > .env")
	box := project.BoxName(dest) // dest's parent is real: no symlinks under e2eBase
	cleanupBox(t, box)
	t.Cleanup(func() { os.RemoveAll(filepath.Join(suite.home, "clones", box+".git")) })

	var doc struct {
		Box, Dir, Store, Branch string
		Delivered               bool
	}
	t.Run("clone --yes boots a box without a mount and checks out there only", func(t *testing.T) {
		r := corral(t, base, nil, "clone", "--yes", "--json", src, dest)
		if r.code != 0 {
			t.Fatalf("clone: exit %d: %s", r.code, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || !doc.Delivered || doc.Box != box || doc.Branch != "main" {
			t.Fatalf("clone --json: %v: %+v (want box %s delivered on main)", err, doc, box)
		}
		entries, _ := os.ReadDir(dest)
		if len(entries) != 1 || entries[0].Name() != ".corral-clone.json" {
			t.Errorf("DIR holds %v, want only .corral-clone.json", entries)
		}
		if _, err := os.Stat(filepath.Join(doc.Store, "README")); err == nil {
			t.Errorf("the store %s has a work tree file", doc.Store)
		}
	})
	var rec struct{ GuestDir string }
	data, _ := os.ReadFile(filepath.Join(dest, ".corral-clone.json"))
	if err := json.Unmarshal(data, &rec); err != nil || !strings.HasPrefix(rec.GuestDir, "/home/") || !strings.HasSuffix(rec.GuestDir, "/src/dest") {
		t.Fatalf("record %s: %v: guestDir %q, want /home/<user>.linux/src/dest", data, err, rec.GuestDir)
	}
	gd := rec.GuestDir

	t.Run("the box sees neither the host checkout nor any mount; the session starts in the checkout", func(t *testing.T) {
		r := corral(t, dest, nil, "run", "--", "sh", "-c", `pwd; test ! -e "$1" && test ! -e "$2" && ! grep -Eq ' (9p|virtiofs|fuse\.sshfs) ' /proc/mounts && cat README`, "x", src, dest)
		if r.code != 0 || !strings.HasPrefix(r.stdout, gd+"\n") || !strings.Contains(r.stdout, "hello") {
			t.Fatalf("exit %d, stdout %q: want pwd %s, no host paths, no mounts, README", r.code, r.stdout, gd)
		}
	})
	t.Run("the untracked .env never left the source checkout", func(t *testing.T) {
		r := corral(t, dest, nil, "run", "--", "sh", "-c", `test ! -e "$1/.env" && ! grep -rq SECRET-CORRAL-E2E "$1" "$HOME"`, "x", gd)
		if r.code != 0 {
			t.Fatalf("exit %d: the .env or its content is in the box", r.code)
		}
	})
	t.Run("commit in the box, fetch, diff shows the change; nothing is checked out on the host", func(t *testing.T) {
		r := corral(t, dest, nil, "run", "--", "sh", "-c", `echo changed-in-box >> "$1/README"`, "x", gd)
		if r.code != 0 {
			t.Fatalf("edit: exit %d", r.code)
		}
		r = corral(t, dest, nil, "run", "--", "git", "-C", gd, "-c", "user.name=Box", "-c", "user.email=box@example.invalid", "commit", "-qam", "change in box")
		if r.code != 0 {
			t.Fatalf("commit in box: exit %d: %s", r.code, r.stderr)
		}
		ref := "refs/corral/" + box + "/main"
		r = corral(t, dest, nil, "fetch")
		if r.code != 0 || !strings.Contains(r.stdout, ref) {
			t.Fatalf("fetch: exit %d, stdout %q: want %s", r.code, r.stdout, ref)
		}
		r = corral(t, dest, nil, "diff", ref)
		if r.code != 0 || !strings.Contains(r.stdout, "+changed-in-box") || !strings.Contains(r.stdout, "README") {
			t.Fatalf("diff %s: exit %d, stdout %q: want the README change", ref, r.code, r.stdout)
		}
		entries, _ := os.ReadDir(dest)
		if len(entries) != 1 {
			t.Errorf("after fetch DIR holds %v, want only the record", entries)
		}
		if b, _ := os.ReadFile(filepath.Join(src, "README")); string(b) != "hello\n" {
			t.Errorf("the source checkout changed: README %q", b)
		}
	})
	if os.Getenv("CORRAL_BENCH_CLONE") == "1" {
		t.Run("benchmark", func(t *testing.T) { benchClone(t, base, box, gd) })
	}
}
