package clone

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestFetchHTTPS clones a real repository served by git http-backend over TLS on loopback: the
// store is bare, has every branch and tag, HEAD names main, holds no hooks, no work tree and no
// config from the source, and no git process ran on the host.
func TestFetchHTTPS(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"README": "hello\n", "src/a.go": "package a\n",
		".gitmodules": "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.invalid/lib.git\n"})
	git(t, work, "tag", "-a", "-m", "v1", "v1")
	git(t, work, "branch", "feature")
	srv := bareCopy(t, root, work, "good")
	git(t, srv, "config", "core.hooksPath", "/nonexistent-evil")
	base, hc := serveHTTPS(t, filepath.Join(root, "srv"), nil)
	check := recordGit(t, root)

	store := filepath.Join(os.Getenv("CORRAL_HOME"), "clones", "box-1.git")
	res, err := Fetch(bg(), base+"/good.git", store, Options{HTTPClient: hc})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	check()
	if res.Head != "refs/heads/main" {
		t.Errorf("Head = %q, want refs/heads/main", res.Head)
	}
	var names []string
	for _, r := range res.Refs {
		names = append(names, r.Name)
		if want := git(t, srv, "rev-parse", r.Name); r.Hash != want {
			t.Errorf("%s = %s, want %s", r.Name, r.Hash, want)
		}
	}
	if want := []string{"refs/heads/feature", "refs/heads/main", "refs/tags/v1"}; !reflect.DeepEqual(names, want) {
		t.Errorf("refs %v, want %v", names, want)
	}
	// The store is a complete, bare repository that real git accepts (read-only checks, after the
	// host-side assertion above).
	git(t, store, "fsck", "--strict", "--no-dangling")
	if got := git(t, store, "rev-parse", "--is-bare-repository"); got != "true" {
		t.Errorf("store is not bare: %q", got)
	}
	cfg, _ := os.ReadFile(filepath.Join(store, "config"))
	if strings.Contains(string(cfg), "hooksPath") || strings.Contains(string(cfg), "remote") {
		t.Errorf("store config carries source settings:\n%s", cfg)
	}
	for _, p := range []string{"hooks", "index", "modules", "info/attributes"} {
		if _, err := os.Stat(filepath.Join(store, p)); err == nil {
			t.Errorf("store has %s", p)
		}
	}
	if left := tree(t, filepath.Dir(store)); !reflect.DeepEqual(topLevel(left), []string{".", "box-1.git"}) {
		t.Errorf("clones dir holds %v, want only the store", topLevel(left))
	}
	if _, err := Fetch(bg(), base+"/good.git", store, Options{HTTPClient: hc}); !errors.Is(err, ErrStoreExists) {
		t.Errorf("second Fetch into the same store: %v, want ErrStoreExists", err)
	}
}

// TestFetchLocal copies a local checkout object by object: committed content only, never
// untracked files, and no git process runs.
func TestFetchLocal(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"README": "hello\n", ".gitignore": ".env\n"})
	writeFiles(t, work, map[string]string{".env": "SECRET=1\n", "untracked.txt": "u\n", "README": "dirty\n"})
	check := recordGit(t, root)
	store := filepath.Join(root, "home", ".corral", "clones", "local.git")
	res, err := Fetch(bg(), work, store, Options{})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	check()
	if res.Source.Kind != KindLocal || res.Head != "refs/heads/main" {
		t.Errorf("result %+v", res)
	}
	ls := git(t, store, "ls-tree", "-r", "--name-only", "HEAD")
	if ls != ".gitignore\nREADME" {
		t.Errorf("store HEAD holds %q, want only the committed files", ls)
	}
	if got := git(t, store, "cat-file", "-p", "HEAD:README"); got != "hello" {
		t.Errorf("README in store = %q, want the committed content", got)
	}
}

// TestFetchLocalRefusesAlternates: a local repository that borrows objects from elsewhere on the
// host is refused, so no other repository's objects can reach a box.
func TestFetchLocalRefusesAlternates(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"a": "a\n"})
	must(t, os.WriteFile(filepath.Join(work, ".git", "objects", "info", "alternates"), []byte("/etc\n"), 0o644))
	store := filepath.Join(root, "home", ".corral", "clones", "x.git")
	if _, err := Fetch(bg(), work, store, Options{}); !errors.Is(err, ErrSource) {
		t.Fatalf("Fetch: %v, want ErrSource", err)
	}
	assertNothingLeft(t, store)
}

func topLevel(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !strings.Contains(p, string(filepath.Separator)) {
			out = append(out, p)
		}
	}
	return out
}

// assertNothingLeft fails if store or any staging dir beside it exists.
func assertNothingLeft(t *testing.T, store string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Dir(store))
	for _, e := range entries {
		t.Errorf("left behind in %s: %s", filepath.Dir(store), e.Name())
	}
}

// TestFetchWarnsOnce: a .gitmodules url without integrity protection (git://) is a warning,
// and the same .gitmodules blob reached from two branches and several commits is one warning.
func TestFetchWarnsOnce(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"README": "hello\n",
		".gitmodules": "[submodule \"lib\"]\n\tpath = lib\n\turl = git://example.invalid/lib.git\n"})
	git(t, work, "branch", "feature")
	writeFiles(t, work, map[string]string{"README": "again\n"})
	git(t, work, "commit", "-qam", "second")
	store := filepath.Join(root, "home", ".corral", "clones", "warn.git")
	res, err := Fetch(bg(), work, store, Options{})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	var got []string
	for _, w := range res.Warnings {
		got = append(got, w.String())
	}
	if len(got) != 1 || !strings.Contains(got[0], "no integrity protection") {
		t.Errorf("warnings %q, want the git:// url once", got)
	}
}
