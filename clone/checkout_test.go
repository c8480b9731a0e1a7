package clone_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/internal/sandboxguest"
)

// gitTestHome finds git (skipping the test without it) and points HOME, CORRAL_HOME and git's
// global and system config into a fresh temporary directory, which it returns with git's path.
func gitTestHome(t *testing.T) (gitBin, root string) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed (scripts/setup.sh installs it): %v", err)
	}
	root = t.TempDir()
	t.Setenv("HOME", root)
	t.Setenv("CORRAL_HOME", filepath.Join(root, ".corral"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(root, "gitconfig"))
	return gitBin, root
}

// TestCheckoutPath: the guest checkout is always under the box user's home in src/, whatever the
// host directory is called; hostile homes are refused and hostile names become "checkout".
func TestCheckoutPath(t *testing.T) {
	for _, tc := range []struct {
		home, name, want string
		fails            bool
	}{
		{"/home/ci.linux", "repo", "/home/ci.linux/src/repo", false},
		{"/home/ci.linux", "my repo", "/home/ci.linux/src/my repo", false},
		{"/home/ci.linux", "..", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", ".ssh", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", "-rf", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", "a\nb", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", "x\u202ey", "/home/ci.linux/src/checkout", false},
		{"/home/ci.linux", "", "/home/ci.linux/src/checkout", false},
		{"", "repo", "", true},
		{"relative", "repo", "", true},
		{"/", "repo", "", true},
		{"/home/../etc", "repo", "", true},
		{"/home/a\nb", "repo", "", true},
	} {
		got, err := clone.CheckoutPath(tc.home, tc.name)
		if (err != nil) != tc.fails || got != tc.want {
			t.Errorf("CheckoutPath(%q, %q) = %q, %v; want %q, fails %v", tc.home, tc.name, got, err, tc.want, tc.fails)
		}
	}
}

// TestDeliverCheckout: source = "clone" gives the box HEAD plus the current content of tracked
// files, deletions included, and never an untracked or ignored file, with real git in a
// sandbox guest.
func TestDeliverCheckout(t *testing.T) {
	gitBin, root := gitTestHome(t)
	top := filepath.Join(root, "work")
	git := func(args ...string) {
		cmd := exec.Command(gitBin, append([]string{"-C", top}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x",
			"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(top, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(top, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	write("README", "committed\n")
	write("gone", "tracked then deleted\n")
	write(".gitignore", "build/\n")
	git("add", "-A")
	git("commit", "-qm", "init")
	write("README", "committed\nuncommitted tracked change\n")
	write(".env", "SECRET=1\n")
	if err := os.Remove(filepath.Join(top, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(top, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("build/out", "ignored\n")

	g, err := sandboxguest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	dir := g.Path("src/work")
	store := filepath.Join(root, ".corral", "clones", "work.git")
	if _, err := clone.DeliverCheckout(context.Background(), g, top, store, dir, true, nil); err != nil {
		t.Fatalf("DeliverCheckout: %v\n%s", err, g.Stderr())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "README")); err != nil || string(b) != "committed\nuncommitted tracked change\n" {
		t.Errorf("guest README = %q, %v: want the work tree's tracked content", b, err)
	}
	for _, name := range []string{".env", "gone", "build/out", "build"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("guest has %s: untracked, ignored or deleted files must not be delivered", name)
		}
	}
	var st bytes.Buffer
	if code, err := g.Exec(context.Background(), []string{"git", "-C", dir, "status", "--porcelain"}, nil, &st); err != nil || code != 0 {
		t.Fatalf("guest git status: %d %v %s", code, err, g.Stderr())
	}
	if got := st.String(); !strings.Contains(got, " M README") || !strings.Contains(got, " D gone") || strings.Contains(got, ".env") {
		t.Errorf("guest status %q: want README modified and gone deleted as uncommitted changes, no .env", got)
	}
	// Delivering again replaces the host store (git corral's own), never the guest checkout.
	if _, err := clone.DeliverCheckout(context.Background(), g, top, store, g.Path("src/again"), false, nil); err != nil {
		t.Fatalf("second DeliverCheckout: %v\n%s", err, g.Stderr())
	}
	if b, err := os.ReadFile(g.Path("src/again/README")); err != nil || string(b) != "committed\n" {
		t.Errorf("without changes the guest README = %q, %v: want HEAD's content", b, err)
	}
}

// refuseGuest fails the test when anything would run in the box.
type refuseGuest struct{ t *testing.T }

func (g refuseGuest) Exec(_ context.Context, argv []string, _ io.Reader, _ io.Writer) (int, error) {
	g.t.Errorf("the guest was asked to run %q", argv)
	return 1, nil
}

// TestDeliverCheckoutRefusesHostileGitmodules: with clone_uncommitted, an uncommitted edit that
// makes a tracked .gitmodules hostile refuses the delivery, naming the entry, before anything
// runs in the box; without it HEAD's clean .gitmodules is planned.
func TestDeliverCheckoutRefusesHostileGitmodules(t *testing.T) {
	gitBin, root := gitTestHome(t)
	top := filepath.Join(root, "work")
	git := func(args ...string) string {
		cmd := exec.Command(gitBin, append([]string{"-C", top}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(top, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	gm := filepath.Join(top, ".gitmodules")
	if err := os.WriteFile(gm, []byte("[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.invalid/lib.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".gitmodules")
	git("commit", "-qm", "init")
	git("update-index", "--add", "--cacheinfo", "160000,"+git("rev-parse", "HEAD")+",lib")
	git("commit", "-qm", "lib")
	if err := os.WriteFile(gm, []byte("[submodule \"lib\"]\n\tpath = lib\n\turl = ext::sh -c id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(root, ".corral", "clones", "work.git")
	_, err := clone.DeliverCheckout(context.Background(), refuseGuest{t}, top, store, "/home/u/src/work", true, clone.TransportsFull)
	if !errors.Is(err, clone.ErrRefused) || !strings.Contains(err.Error(), "submodule.lib.url") {
		t.Fatalf("deliverCheckout with the hostile edit: %v; want submodule.lib.url refused", err)
	}
	g, err := sandboxguest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	plan, err := clone.DeliverCheckout(context.Background(), g, top, store, g.Path("src/work"), false, clone.TransportsBroker)
	if err != nil || len(plan.Fetch) != 1 || plan.Fetch[0].URL != "https://example.invalid/lib.git" {
		t.Fatalf("deliverCheckout of HEAD = %+v, %v; want HEAD's lib planned\n%s", plan, err, g.Stderr())
	}
}
