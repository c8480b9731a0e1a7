package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/internal/sandboxguest"
)

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
		got, err := checkoutPath(tc.home, tc.name)
		if (err != nil) != tc.fails || got != tc.want {
			t.Errorf("checkoutPath(%q, %q) = %q, %v; want %q, fails %v", tc.home, tc.name, got, err, tc.want, tc.fails)
		}
	}
}

// TestEscapedWriter: guest stderr reaches the terminal with control characters escaped and
// reports the full length written, so the SSH copy does not stop early.
func TestEscapedWriter(t *testing.T) {
	var b bytes.Buffer
	w := &escapedWriter{w: &b}
	in := "ok\n\x1b]0;owned\x07\n"
	n, err := w.Write([]byte(in))
	if err != nil || n != len(in) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	if bytes.ContainsAny(b.Bytes(), "\x1b\x07") || !bytes.HasPrefix(b.Bytes(), []byte("ok\n")) {
		t.Errorf("escaped output %q still holds control characters or lost the newline", b.String())
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
	if _, err := deliverCheckout(context.Background(), g, top, store, dir, true, nil); err != nil {
		t.Fatalf("deliverCheckout: %v\n%s", err, g.Stderr())
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
	if _, err := deliverCheckout(context.Background(), g, top, store, g.Path("src/again"), false, nil); err != nil {
		t.Fatalf("second deliverCheckout: %v\n%s", err, g.Stderr())
	}
	if b, err := os.ReadFile(g.Path("src/again/README")); err != nil || string(b) != "committed\n" {
		t.Errorf("without changes the guest README = %q, %v: want HEAD's content", b, err)
	}
}
