package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/project"
)

// gitID is a fixed identity for commits made by the tests, on the host and in the box.
var gitID = []string{"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=T",
	"GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z"}

// cloneCase makes an empty directory owned by the test user for one scenario (a clone target,
// or the checkout newProject fills), removed when the test ends.
func cloneCase(t *testing.T, name string) string {
	t.Helper()
	claimProject(t, name)
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
// with an untracked .env and a submodule served by git daemon on the host's loopback; the box's
// own git fetches the submodule; a commit in the box comes back with fetch and shows in diff;
// the host never has a work tree and the .env never reaches the box. Then that box is deleted
// and a second one shows source = "clone" for an existing checkout in broker mode.
func TestCloneBox(t *testing.T) {
	group(t)
	base := cloneCase(t, "clonebox")
	src, dest := filepath.Join(base, "src"), filepath.Join(base, "dest")
	sh(t, "git init -q -b main "+base+"/subrepo && cd "+base+"/subrepo && echo from-the-submodule > SUBFILE && git add SUBFILE && git commit -qm sub")
	port := gitDaemon(t, base)
	sh(t, "git init -q -b main "+src+" && cd "+src+" && echo hello > README && git add README && git commit -qm init && echo SECRET-CORRAL-E2E=1 > .env"+
		" && git update-index --add --cacheinfo 160000,$(git -C ../subrepo rev-parse HEAD),lib"+
		fmt.Sprintf(` && printf '[submodule "lib"]\n\tpath = lib\n\turl = git://192.168.5.2:%d/subrepo\n' > .gitmodules`, port)+
		" && git add .gitmodules && git commit -qm 'submodule lib'")
	box := project.BoxName(dest) // dest's parent is real: no symlinks under e2eBase
	cleanupBox(t, box)
	t.Cleanup(func() { os.RemoveAll(filepath.Join(suite.home, "clones", box+".git")) })

	var doc struct {
		Box, Dir, Store, Branch string
		Delivered               bool
		Submodules              []struct{ Path, Transport string }
	}
	t.Run("clone --yes boots a box without a mount and checks out there only", func(t *testing.T) {
		r := corral(t, base, nil, "clone", "--yes", "--json", src, dest)
		if r.code != 0 {
			t.Fatalf("clone: exit %d: %s", r.code, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || !doc.Delivered || doc.Box != box || doc.Branch != "main" {
			t.Fatalf("clone --json: %v: %+v (want box %s delivered on main)", err, doc, box)
		}
		// A clone box resumes the golden base like a checkout's box (nothing mounted: QEMU's
		// project device is an empty read-only directory, which the box never mounts).
		// (A golden build before it boots; a resume that fails boots from the base's disk.)
		if i := strings.Index(r.stderr, "corral: resume golden state"); i < 0 || strings.Contains(r.stderr[i:], "corral: boot (") {
			t.Errorf("the clone box did not resume the golden state; stderr:\n%s", r.stderr)
		}
		if len(doc.Submodules) != 1 || doc.Submodules[0].Path != "lib" || doc.Submodules[0].Transport != "git" {
			t.Errorf("clone --json submodules %+v, want lib over git", doc.Submodules)
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
	t.Run("the box's own git fetched the submodule; the host has none", func(t *testing.T) {
		r := corral(t, dest, nil, "run", "--", "sh", "-c", `cat lib/SUBFILE && git submodule status`)
		if r.code != 0 || !strings.Contains(r.stdout, "from-the-submodule\n ") || !strings.Contains(r.stdout, " lib") {
			t.Fatalf("exit %d, stdout %q: want lib/SUBFILE and an initialised submodule", r.code, r.stdout)
		}
		if _, err := os.Stat(filepath.Join(src, "lib", "SUBFILE")); err == nil {
			t.Error("the submodule was checked out on the host")
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
	t.Run("source = clone: HEAD and tracked changes reach a broker box; .env and the checkout never do", func(t *testing.T) {
		cloneSourceBroker(t, base, box, port)
	})
}

// brokerBoxChecks runs in a broker-mode clone box with $1 a host path and $2 a port listening
// on the host's 127.0.0.1: no host path and no mount is visible, the session has the broker's
// proxy, a direct connection to the host is dropped, and sudo is gone.
const brokerBoxChecks = `test ! -e "$1"; ! grep -Eq ' (9p|virtiofs|fuse\.sshfs) ' /proc/mounts
case "$http_proxy" in http://corral:*@192.168.5.2:*) echo proxy-set ;; esac
! timeout 10 bash -c 'exec 3<>/dev/tcp/192.168.5.2/'$2 2>/dev/null && echo direct-refused
! sudo -n true 2>/dev/null && echo no-sudo`

// cloneSourceBroker deletes the clone group's first box (one box at a time), then runs a session
// in a checkout whose .corral.toml says source = "clone", with network = "broker" and
// clone_uncommitted = true in its trusted per-project file: the box mounts nothing, gets HEAD
// plus the uncommitted README change and never the untracked .env, passes the broker-mode guard
// check (the git daemon the first box reached directly is refused), and its commit comes back
// as refs/corral/<box>/main in the checkout.
func cloneSourceBroker(t *testing.T, base, firstBox string, daemonPort int) {
	if r := runCmd(t, asUser([]string{suite.bin, "--box", firstBox, "delete", "--yes"}), "delete "+firstBox); r.code != 0 {
		t.Fatalf("delete the first box: exit %d: %s", r.code, r.stderr)
	}
	co := filepath.Join(base, "co")
	sh(t, "git init -q -b main "+co+" && cd "+co+` && echo committed > README && printf 'source = "clone"\n' > .corral.toml`+
		" && git add -A && git commit -qm init && echo uncommitted >> README && echo SECRET-CORRAL-E2E-CO=1 > .env")
	cobox := project.BoxName(co)
	cleanupBox(t, cobox)
	writeFile(t, filepath.Join(suite.home, "projects", cobox+".toml"), "network = \"broker\"\nclone_uncommitted = true\n", 0o600)
	check := `set -e; pwd; cat README; git status --porcelain; test ! -e .env; ! grep -rq SECRET-CORRAL-E2E-CO "$HOME"
` + brokerBoxChecks
	r := corral(t, co, nil, "run", "--yes", "--", "bash", "-c", check, "x", co, fmt.Sprint(daemonPort))
	for _, want := range []string{"/src/co\n", "committed\nuncommitted\n", " M README", "proxy-set", "direct-refused", "no-sudo"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("exit %d, stdout %q: want %q", r.code, r.stdout, want)
		}
	}
	r = corral(t, co, nil, "run", "--", "git", "-c", "user.name=Box", "-c", "user.email=box@example.invalid", "commit", "-qam", "box change")
	if r.code != 0 {
		t.Fatalf("commit in box: exit %d: %s", r.code, r.stderr)
	}
	ref := "refs/corral/" + cobox + "/main"
	if r = corral(t, co, nil, "fetch"); r.code != 0 || !strings.Contains(r.stdout, ref) {
		t.Fatalf("fetch: exit %d, stdout %q: want %s", r.code, r.stdout, ref)
	}
	if got := strings.TrimSpace(sh(t, "git -C "+co+" log -1 --format=%s "+ref).stdout); got != "box change" {
		t.Errorf("%s is %q, want the box's commit", ref, got)
	}
	if b, _ := os.ReadFile(filepath.Join(co, "README")); string(b) != "committed\nuncommitted\n" {
		t.Errorf("the host checkout changed: README %q", b)
	}
}

// TestCloneBoxBroker is the README's own example, so it runs in every e2e run (one more box):
// "git corral clone --network broker" of a local repository with a git:// submodule: the box
// passes the broker-mode guard check, sessions get the broker's proxy, the host is not reachable
// directly, and the submodule is skipped by name (broker mode fetches submodules over https).
func TestCloneBoxBroker(t *testing.T) {
	group(t)
	base := cloneCase(t, "clonebroker")
	src, dest := filepath.Join(base, "src"), filepath.Join(base, "dest")
	port := gitDaemon(t, base)
	sh(t, "git init -q -b main "+src+" && cd "+src+" && echo hello > README && git add README && git commit -qm init"+
		" && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),lib"+
		fmt.Sprintf(` && printf '[submodule "lib"]\n\tpath = lib\n\turl = git://192.168.5.2:%d/src\n' > .gitmodules`, port)+
		" && git add .gitmodules && git commit -qm 'submodule lib'")
	box := project.BoxName(dest)
	cleanupBox(t, box)
	t.Cleanup(func() { os.RemoveAll(filepath.Join(suite.home, "clones", box+".git")) })
	r := corral(t, base, nil, "clone", "--yes", "--network", "broker", "--json", src, dest)
	var doc struct {
		Delivered         bool
		Submodules        []struct{ Path string }
		SubmodulesSkipped []struct{ Path, Reason string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil || !doc.Delivered {
		t.Fatalf("clone --network broker: exit %d, %v: %s", r.code, err, r.stderr)
	}
	if len(doc.Submodules) != 0 || len(doc.SubmodulesSkipped) != 1 || doc.SubmodulesSkipped[0].Path != "submodule.lib.url" {
		t.Errorf("submodules %+v skipped %+v: want lib skipped (git:// in broker mode)", doc.Submodules, doc.SubmodulesSkipped)
	}
	r = corral(t, dest, nil, "run", "--", "bash", "-c", "set -e; cat README; "+brokerBoxChecks, "x", src, fmt.Sprint(port))
	for _, want := range []string{"hello", "proxy-set", "direct-refused", "no-sudo"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("exit %d, stdout %q: want %q", r.code, r.stdout, want)
		}
	}
}
