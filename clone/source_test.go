package clone

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseSource(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	must(t, os.MkdirAll(repo, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
	ok := []struct {
		in   string
		kind Kind
	}{
		{"https://example.com/a/b.git", KindHTTPS},
		{"HTTPS://example.com/a", KindHTTPS},
		{"ssh://git@example.com/a.git", KindSSH},
		{"git@example.com:a/b.git", KindSSH},
		{"example.com:a/b.git", KindSSH},
		{repo, KindLocal},
		{"repo", KindLocal},
		{"./repo", KindLocal},
	}
	for _, c := range ok {
		src, err := ParseSource(c.in, dir)
		if err != nil || src.Kind != c.kind {
			t.Errorf("ParseSource(%q) = %+v, %v; want kind %s", c.in, src, err, c.kind)
		}
	}
	refused := []string{
		"", "-oProxyCommand=x", "--upload-pack=touch /tmp/x",
		"https://example.com/a\n", "https://example.com/a\r", "ssh://example.com/\x00",
		"ext::sh -c touch% /tmp/pwned", "fd::17", "transport::https://example.com",
		"git://example.com/a.git", "http://example.com/a.git", "file:///etc", "FILE://" + repo,
		"ftp://example.com/a", "https://user:secret@example.com/a", "ssh://-oProxyCommand=x/a",
		"ssh://-user@example.com/a", "https:///nohost",
		// net/url refuses a bracketed host that is not an IP: kept so that stays true.
		"ssh://[-oProxyCommand=x]/r", "https://[-x]:443/r", "git@-oProxyCommand=x:a",
		filepath.Join(dir, "file"), filepath.Join(dir, "missing"),
	}
	for _, in := range refused {
		if src, err := ParseSource(in, dir); !errors.Is(err, ErrSource) {
			t.Errorf("ParseSource(%q) = %+v, %v; want ErrSource", in, src, err)
		}
	}
}

func TestRefNameProblem(t *testing.T) {
	for _, ok := range []string{"refs/heads/main", "refs/heads/feature/x-1", "refs/tags/v1.2.3", "refs/heads/ünïcode"} {
		if why := RefNameProblem(ok); why != "" {
			t.Errorf("RefNameProblem(%q) = %q, want accepted", ok, why)
		}
	}
	for _, bad := range []string{"HEAD", "refs/remotes/x", "refs/heads/a..b", "refs/heads/a.lock", "refs/heads/x/",
		"refs/heads/x.", "refs/heads/.x", "refs/heads/a b", "refs/heads/a~1", "refs/heads/a^", "refs/heads/a:b",
		"refs/heads/a?", "refs/heads/a*", "refs/heads/a[", `refs/heads/a\b`, "refs/heads/@", "refs/heads/a@{1}",
		"refs/heads/a//b", "refs/heads/\x1b[2J", "refs/heads/a\u202eb", "refs/heads/a\u200b", "refs/heads/GIT~1/x"} {
		if RefNameProblem(bad) == "" {
			t.Errorf("RefNameProblem(%q) accepted it", bad)
		}
	}
}

func TestComponentProblem(t *testing.T) {
	for _, ok := range []string{"README", ".github", ".gitignore", "git", "a.git", ".gitx", "x~1", "...a"} {
		if why := componentProblem(ok); why != "" {
			t.Errorf("componentProblem(%q) = %q, want accepted", ok, why)
		}
	}
	for _, bad := range []string{"", ".", "..", ".git", ".GIT", ".gIt", "git~1", "GIT~1", ".git.", ".git ", ".git. . ",
		".git::$INDEX_ALLOCATION", ".g\u200cit", "\ufeff.git", ".\u200d.", `a\.git`, `..\x`, "a/b", "a\x00", "a\nb", "a\rb", "\x1b"} {
		if componentProblem(bad) == "" {
			t.Errorf("componentProblem(%q) accepted it", bad)
		}
	}
}

func TestGitmodulesProblems(t *testing.T) {
	good := "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = https://example.com/lib.git\n\tupdate = rebase\n\tbranch = main\n" +
		"[submodule \"rel\"]\r\n\tpath = rel\r\n\turl = ../rel.git\r\n" +
		"[submodule \"scp\"]\n\tpath = scp\n\turl = git@example.com:x/y.git\n"
	if ps := GitmodulesProblems([]byte(good)); len(ps) != 0 {
		t.Errorf("good .gitmodules refused: %v", ps)
	}
	warn := "[submodule \"w\"]\n\tpath = w\n\turl = git://example.com/w.git\n"
	if ps := GitmodulesProblems([]byte(warn)); len(ps) != 1 || ps[0].Reason[:8] != "warning:" {
		t.Errorf("git:// url: %v, want one warning", ps)
	}
	for _, bad := range []string{
		"[submodule \"x\"]\n\tpath = a\n\turl = C:/Users/me/repo\n",
		"[submodule \"x\"]\n\tpath = a\n\turl = repo-next-door\n",
		"[submodule \"x\"]\n\tpath = a\n\turl = https://x/y\n\tupdate = !sh\n",
		"[submodule \"x\"]\n\tpath = a\n\turl = https://x/y\n\tupdate = foo\n",
		"[submodule \"x\"]\n\tpath = a\n\turl = https://x/y\n\tbranch = -b\n",
		"[submodule \"x\"]\n\tpath = /abs\n\turl = https://x/y\n",
		"[submodule \"..\"]\n\tpath = a\n\turl = https://x/y\n",
		"[submodule \"a\\\\..\\\\..\\\\b\"]\n\tpath = a\n\turl = https://x/y\n",
		"[submodule \"-x\"]\n\tpath = a\n\turl = https://x/y\n",
		"[submodule]\n\tpath = a\n",
		"[submodule \"x\"]\n\tpath = a\x00\n",
	} {
		if ps := GitmodulesProblems([]byte(bad)); len(ps) == 0 {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestFetchRefusesWithoutDialling: refused transports are refused before any connection: a
// listener on loopback standing in for git daemon (and for an http server) sees no connection.
func TestFetchRefusesWithoutDialling(t *testing.T) {
	root := hermetic(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	store := filepath.Join(root, "home", ".corral", "clones", "x.git")
	for _, u := range []string{"git://" + addr + "/r.git", "http://" + addr + "/r.git", "ext::nc 127.0.0.1 " + addr[strings.LastIndex(addr, ":")+1:]} {
		if _, err := Fetch(bg(), u, store, Options{}); !errors.Is(err, ErrSource) {
			t.Errorf("Fetch(%q): %v, want ErrSource", u, err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections reached the listener", n)
	}
	if _, err := os.Stat(filepath.Dir(store)); !os.IsNotExist(err) {
		t.Errorf("clones dir created for a refused address: %v", err)
	}
}
