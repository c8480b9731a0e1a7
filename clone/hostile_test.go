package clone

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// hostileCase builds a bare repository at gitDir whose main branch carries one hostile shape.
type hostileCase struct {
	name  string
	class Class
	build func(t *testing.T, gitDir string)
}

// treeWith commits a root tree holding a README and the given extra entries.
func treeWith(extra ...func(t *testing.T, g string) entry) func(t *testing.T, g string) {
	return func(t *testing.T, g string) {
		es := []entry{{"100644", "README", blob(t, g, "hi\n")}}
		for _, e := range extra {
			es = append(es, e(t, g))
		}
		rawCommit(t, g, rawTree(t, g, es...))
	}
}

// dirWith is a directory entry name holding one file (name → content), nested as given.
func dirWith(name string, inner string, mode string, content string) func(t *testing.T, g string) entry {
	return func(t *testing.T, g string) entry {
		return entry{"40000", name, rawTree(t, g, entry{mode, inner, blob(t, g, content)})}
	}
}

func file(mode, name, content string) func(t *testing.T, g string) entry {
	return func(t *testing.T, g string) entry { return entry{mode, name, blob(t, g, content)} }
}

func gitmodules(content string) func(t *testing.T, g string) entry {
	return file("100644", ".gitmodules", content)
}

const hook = "#!/bin/sh\ntouch /tmp/corral-pwned\n"

func hostileTrees() []hostileCase {
	nested := func(t *testing.T, g string) entry {
		hooks := rawTree(t, g, entry{"100755", "post-checkout", blob(t, g, hook)})
		dotgit := rawTree(t, g, entry{"40000", "hooks", hooks})
		return entry{"40000", "x", rawTree(t, g, entry{"40000", ".git", dotgit})}
	}
	return []hostileCase{
		{"dot-git config", ClassTree, treeWith(dirWith(".git", "config", "100644", "[core]\n\thooksPath = /tmp\n"))},
		{"upper-case .GIT", ClassTree, treeWith(dirWith(".GIT", "config", "100644", "x"))},
		{"mixed-case .Git hooks", ClassTree, treeWith(dirWith(".Git", "post-checkout", "100755", hook))},
		{"nested x/.git/hooks", ClassTree, treeWith(nested)},
		{"NTFS short name GIT~1", ClassTree, treeWith(dirWith("GIT~1", "config", "100644", "x"))},
		{"NTFS trailing dot .git.", ClassTree, treeWith(dirWith(".git.", "config", "100644", "x"))},
		{"NTFS stream .git::$INDEX_ALLOCATION", ClassTree, treeWith(dirWith(".git::$INDEX_ALLOCATION", "config", "100644", "x"))},
		{"HFS ignorable .g\u200cit", ClassTree, treeWith(dirWith(".g\u200cit", "config", "100644", "x"))},
		{"dot-dot entry", ClassTree, treeWith(dirWith("..", "evil", "100644", "x"))},
		{"backslash ..\\evil", ClassTree, treeWith(file("100644", `..\evil`, "x"))},
		{"newline in name", ClassTree, treeWith(file("100644", "a\nb", "x"))},
		{"symlink then write through (case fold)", ClassTree, treeWith(
			file("120000", "A", "/home"), dirWith("a", "authorized_keys", "100644", "ssh-ed25519 AAAA evil"))},
		{"duplicate entries", ClassTree, treeWith(file("100644", "dup", "1"), file("100644", "dup", "2"))},
		{"symlinked .gitmodules", ClassTree, treeWith(file("120000", ".gitmodules", "/etc/passwd"))},
		{"symlink into .git", ClassTree, treeWith(file("120000", "h", "../.git/hooks/pre-commit"))},
		{"bad mode", ClassTree, treeWith(file("100666", "weird", "x"))},
	}
}

func hostileGitmodules() []hostileCase {
	sub := func(body string) func(t *testing.T, g string) {
		return treeWith(gitmodules("[submodule \"ok\"]\n" + body))
	}
	return []hostileCase{
		{"name with ../", ClassGitmodules, treeWith(gitmodules("[submodule \"../../modules/evil\"]\n\tpath = lib\n\turl = https://example.invalid/x\n"))},
		{"nested name trick", ClassGitmodules, treeWith(gitmodules("[submodule \"a/../../b\"]\n\tpath = lib\n\turl = https://example.invalid/x\n"))},
		{"absolute name", ClassGitmodules, treeWith(gitmodules("[submodule \"/etc\"]\n\tpath = lib\n\turl = https://example.invalid/x\n"))},
		{"path with ..", ClassGitmodules, sub("\tpath = ../outside\n\turl = https://example.invalid/x\n")},
		{"path starting with -", ClassGitmodules, sub("\tpath = -evil\n\turl = https://example.invalid/x\n")},
		{"path .git", ClassGitmodules, sub("\tpath = .git/hooks\n\turl = https://example.invalid/x\n")},
		{"path ending in CR", ClassGitmodules, sub("\tpath = lib\r\r\n\turl = https://example.invalid/x\n")},
		{"url with newline escape", ClassGitmodules, sub("\tpath = lib\n\turl = \"https://example.invalid/x\\n[core]\"\n")},
		{"url starting with -", ClassGitmodules, sub("\tpath = lib\n\turl = -upload-pack=touch /tmp/pwned\n")},
		{"url ssh host -o", ClassGitmodules, sub("\tpath = lib\n\turl = ssh://-oProxyCommand=touch%20pwned/x\n")},
		{"url ext::", ClassGitmodules, sub("\tpath = lib\n\turl = ext::sh -c touch% /tmp/pwned\n")},
		{"url file://", ClassGitmodules, sub("\tpath = lib\n\turl = file:///home/user/.ssh\n")},
		{"url absolute local path", ClassGitmodules, sub("\tpath = lib\n\turl = /home/user/private.git\n")},
		{"url home path", ClassGitmodules, sub("\tpath = lib\n\turl = ~/private.git\n")},
		{"update !command", ClassGitmodules, sub("\tpath = lib\n\turl = https://example.invalid/x\n\tupdate = !touch /tmp/pwned\n")},
		{"unparseable", ClassGitmodules, treeWith(gitmodules("[submodule \"x\"\n\tpath = lib\n"))},
		// The red team's cases of #19 (git fsck refuses each; see TestGitmodulesURLClasses).
		{"url with no host", ClassGitmodules, sub("\tpath = lib\n\turl = https:///x\n")},
		{"url ../ walk into a host", ClassGitmodules, sub("\tpath = lib\n\turl = ../../../..//host/x\n")},
		{"url with %0a", ClassGitmodules, sub("\tpath = lib\n\turl = https://example.invalid/x%0a\n")},
		{"url ssh [-o] in brackets", ClassGitmodules, sub("\tpath = lib\n\turl = ssh://[-oProxyCommand=x]/r\n")},
		{"nested names", ClassGitmodules, treeWith(gitmodules("[submodule \"hippo\"]\n\tpath = a\n\turl = https://example.invalid/a\n" +
			"[submodule \"hippo/hooks\"]\n\tpath = b\n\turl = https://example.invalid/b\n"))},
		{"nested .gitmodules too", ClassGitmodules, treeWith(dirWith("vendor", ".gitmodules", "100644", "[submodule \"x\"]\n\tpath = y\n\turl = ext::sh\n"))},
	}
}

// TestFetchRefusesHostileTrees serves each hostile repository with real git over https on
// loopback: each is refused with its class named, nothing is left in $CORRAL_HOME, $HOME is
// unchanged, and no git process runs on the host.
func TestFetchRefusesHostile(t *testing.T) {
	root := hermetic(t)
	srvDir := filepath.Join(root, "srv")
	cases := append(hostileTrees(), hostileGitmodules()...)
	for i, c := range cases {
		g := filepath.Join(srvDir, fmt.Sprintf("r%02d.git", i))
		git(t, root, "init", "-q", "--bare", g)
		c.build(t, g)
	}
	base, hc := serveHTTPS(t, srvDir, nil)
	home := os.Getenv("HOME")
	check := recordGit(t, root)
	before := tree(t, home)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := filepath.Join(os.Getenv("CORRAL_HOME"), "clones", "hostile.git")
			_, err := Fetch(bg(), base+"/"+fmt.Sprintf("r%02d.git", i), store, Options{HTTPClient: hc})
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
				t.Fatalf("Fetch: %v, want a refusal", err)
			}
			if !re.Has(c.class) {
				t.Errorf("refusal %v does not name class %s", err, c.class)
			}
			t.Logf("refused: %v", err)
			assertNothingLeft(t, store)
		})
	}
	check()
	after := tree(t, home)
	if !reflect.DeepEqual(withoutClonesDir(before), withoutClonesDir(after)) {
		t.Errorf("$HOME changed:\nbefore %v\nafter  %v", before, after)
	}
}

func withoutClonesDir(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p != ".corral" && p != filepath.Join(".corral", "clones") {
			out = append(out, p)
		}
	}
	return out
}

var _ = plumbing.ZeroHash
