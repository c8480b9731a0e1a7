package clone

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// realGit is the git the tests build fixtures and run servers with, found before any test puts
// its recording wrapper first on PATH.
var realGit = func() string {
	p, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	return p
}()

// hermetic points HOME, CORRAL_HOME and git's config into the test's temp dir and pins
// identities and dates. It returns the temp root.
func hermetic(t *testing.T) string {
	t.Helper()
	if realGit == "" {
		t.Skip("git is not installed: the fixtures and servers need it")
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	must(t, os.MkdirAll(home, 0o755))
	for k, v := range map[string]string{
		"HOME": home, "CORRAL_HOME": filepath.Join(home, ".corral"),
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME": "Corral Test", "GIT_AUTHOR_EMAIL": "test@corral.invalid",
		"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_NAME": "Corral Test",
		"GIT_COMMITTER_EMAIL": "test@corral.invalid", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
	} {
		t.Setenv(k, v)
	}
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[init]\n\tdefaultBranch = main\n"), 0o644))
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// git runs the real git (never the wrapper) in dir and returns its trimmed stdout.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(realGit, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// makeRepo creates a work tree repository at dir with files committed on main.
func makeRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	git(t, dir, "init", "-q")
	writeFiles(t, dir, files)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "init")
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// bareCopy makes <root>/srv/<name>.git, a bare clone of the work tree repo at from.
func bareCopy(t *testing.T, root, from, name string) string {
	t.Helper()
	dst := filepath.Join(root, "srv", name+".git")
	git(t, root, "clone", "-q", "--bare", from, dst)
	return dst
}

// serveHTTPS serves every repository under dir with the real git http-backend behind a TLS
// server on loopback, and returns its base URL and a client that trusts it.
func serveHTTPS(t *testing.T, dir string, wrap func(http.Handler) http.Handler) (string, *http.Client) {
	t.Helper()
	srv := serveHTTPSServer(t, dir, wrap)
	return srv.URL, srv.Client()
}

// serveHTTPSServer is serveHTTPS returning the server itself (for its certificate).
func serveHTTPSServer(t *testing.T, dir string, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	var h http.Handler = &cgi.Handler{
		Path: realGit,
		Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1",
			"PATH=" + filepath.Dir(realGit) + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir},
	}
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// recordGit puts a wrapper git first on PATH that logs every invocation and returns a function
// that fails the test if any git process ran on the host since.
func recordGit(t *testing.T, root string) func() {
	t.Helper()
	bin := filepath.Join(root, "wrapbin")
	log := filepath.Join(root, "git-calls.log")
	must(t, os.MkdirAll(bin, 0o755))
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s %%s\\n' \"$PWD\" \"$*\" >> %q\nexec %q \"$@\"\n", log, realGit)
	must(t, os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() {
		t.Helper()
		if data, err := os.ReadFile(log); err == nil && len(data) > 0 {
			t.Errorf("a git process ran on the host:\n%s", data)
		}
	}
}

// tree lists every path under dir (relative), for before/after comparisons.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// rawObject writes an object of type typ with raw content into the repository at gitDir.
func rawObject(t *testing.T, gitDir string, typ plumbing.ObjectType, content []byte) plumbing.Hash {
	t.Helper()
	s := filesystem.NewStorage(osfsNew(gitDir), nil)
	o := s.NewEncodedObject()
	o.SetType(typ)
	w, err := o.Writer()
	must(t, err)
	_, err = w.Write(content)
	must(t, err)
	must(t, w.Close())
	h, err := s.SetEncodedObject(o)
	must(t, err)
	return h
}

// entry is one raw tree entry.
type entry struct {
	mode string
	name string
	hash plumbing.Hash
}

// rawTree writes a tree with exactly these entries, in this order, with no validation.
func rawTree(t *testing.T, gitDir string, entries ...entry) plumbing.Hash {
	t.Helper()
	var b bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s\x00", e.mode, e.name)
		b.Write(e.hash[:])
	}
	return rawObject(t, gitDir, plumbing.TreeObject, b.Bytes())
}

// rawCommit writes a commit of tree and points refs/heads/main (and HEAD) at it.
func rawCommit(t *testing.T, gitDir string, tree plumbing.Hash) plumbing.Hash {
	t.Helper()
	body := fmt.Sprintf("tree %s\nauthor A <a@corral.invalid> 1767225600 +0000\ncommitter A <a@corral.invalid> 1767225600 +0000\n\nhostile\n", tree)
	h := rawObject(t, gitDir, plumbing.CommitObject, []byte(body))
	git(t, gitDir, "update-ref", "refs/heads/main", h.String())
	git(t, gitDir, "symbolic-ref", "HEAD", "refs/heads/main")
	return h
}

func blob(t *testing.T, gitDir, content string) plumbing.Hash {
	return rawObject(t, gitDir, plumbing.BlobObject, []byte(content))
}

func bg() context.Context { return context.Background() }

func osfsNew(dir string) billy.Filesystem { return osfs.New(dir) }

// writeCA writes the TLS server's certificate as PEM to each path, readable by the guest user.
func writeCA(t *testing.T, srv *httptest.Server, paths ...string) {
	t.Helper()
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, p := range paths {
		must(t, os.WriteFile(p, data, 0o644))
	}
}
