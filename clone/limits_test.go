package clone

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// advertiseExtra serves the real advertisement with extra refs (name → the main branch's hash)
// inserted before its final flush: a hostile server whose ref names real git would never send.
func advertiseExtra(names []string, hash string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/info/refs") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			var extra bytes.Buffer
			for _, n := range names {
				line := hash + " " + n + "\n"
				fmt.Fprintf(&extra, "%04x%s", len(line)+4, line)
			}
			body = append(append(body[:len(body)-4:len(body)-4], extra.Bytes()...), "0000"...)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	}
}

// TestFetchRefusesHostileRefs: a server advertising hostile ref names under refs/heads or
// refs/tags is refused before any pack is requested; hostile names elsewhere are ignored.
func TestFetchRefusesHostileRefs(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"README": "hi\n"})
	bareCopy(t, root, work, "r")
	hash := git(t, work, "rev-parse", "HEAD")
	cases := map[string]string{
		"dot-dot":        "refs/heads/../../../config",
		"lock":           "refs/heads/main.lock",
		"escape":         "refs/heads/\x1b[31mred",
		"bidi":           "refs/heads/a\u202eb",
		"zero-width":     "refs/heads/ma\u200bin",
		"hidden":         "refs/heads/.hidden",
		"reflog syntax":  "refs/tags/v1@{0}",
		"double slash":   "refs/heads/a//b",
		"dotgit":         "refs/heads/.git/x",
		"colon":          "refs/tags/a:b",
		"trailing slash": "refs/heads/x/",
	}
	check := recordGit(t, root)
	for name, ref := range cases {
		t.Run(name, func(t *testing.T) {
			base, hc := serveHTTPS(t, filepath.Join(root, "srv"), advertiseExtra([]string{ref}, hash))
			store := filepath.Join(root, "home", ".corral", "clones", "refs.git")
			_, err := Fetch(bg(), base+"/r.git", store, Options{HTTPClient: hc})
			var re *RefusedError
			if !errors.As(err, &re) || !re.Has(ClassRef) {
				t.Fatalf("Fetch with ref %q: %v, want a ref refusal", ref, err)
			}
			assertNothingLeft(t, store)
		})
	}
	t.Run("ignored outside heads and tags", func(t *testing.T) {
		base, hc := serveHTTPS(t, filepath.Join(root, "srv"), advertiseExtra([]string{"refs/pull/1/../../x"}, hash))
		store := filepath.Join(root, "home", ".corral", "clones", "ok.git")
		res, err := Fetch(bg(), base+"/r.git", store, Options{HTTPClient: hc})
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if len(res.Refs) != 1 || res.Refs[0].Name != "refs/heads/main" {
			t.Errorf("refs %v, want only main", res.Refs)
		}
	})
	check()
}

// TestFetchLimits: each cap refuses a repository that exceeds it, cleanly.
func TestFetchLimits(t *testing.T) {
	root := hermetic(t)
	srv := filepath.Join(root, "srv")
	mk := func(name string, build func(dir string)) {
		dir := filepath.Join(root, "work-"+name)
		must(t, os.MkdirAll(dir, 0o755))
		git(t, dir, "init", "-q")
		build(dir)
		bareCopy(t, root, dir, name)
	}
	mk("many", func(d string) {
		files := map[string]string{}
		for i := range 40 {
			files[fmt.Sprintf("f%02d", i)] = fmt.Sprint(i)
		}
		writeFiles(t, d, files)
		git(t, d, "add", "-A")
		git(t, d, "commit", "-q", "-m", "many")
	})
	mk("big", func(d string) {
		noise := make([]byte, 256<<10)
		rand.Read(noise)
		must(t, os.WriteFile(filepath.Join(d, "noise"), noise, 0o644))
		git(t, d, "add", "-A")
		git(t, d, "commit", "-q", "-m", "big")
	})
	mk("bomb", func(d string) {
		must(t, os.WriteFile(filepath.Join(d, "zeros"), make([]byte, 8<<20), 0o644))
		git(t, d, "add", "-A")
		git(t, d, "commit", "-q", "-m", "zeros compress 1000:1")
	})
	mk("deep", func(d string) {
		// Each version rewrites one 1 KiB block of random data, so the cheapest delta base of
		// each version is its neighbour and repack builds long chains.
		data := make([]byte, 40<<10)
		rand.Read(data)
		for i := range 40 {
			rand.Read(data[i<<10 : (i+1)<<10])
			must(t, os.WriteFile(filepath.Join(d, "grow"), data, 0o644))
			git(t, d, "add", "-A")
			git(t, d, "commit", "-q", "-m", fmt.Sprint(i))
		}
	})
	git(t, filepath.Join(srv, "deep.git"), "repack", "-adfq", "--depth=50", "--window=50")
	base, hc := serveHTTPS(t, srv, stall("/slow.git/"))
	mk("slow", func(d string) {
		writeFiles(t, d, map[string]string{"a": "a"})
		git(t, d, "add", "-A")
		git(t, d, "commit", "-q", "-m", "a")
	})

	cases := []struct {
		repo   string
		limits Limits
		want   string
	}{
		{"many", Limits{MaxObjects: 10}, "objects, more than 10"},
		{"big", Limits{MaxPackBytes: 64 << 10}, "bytes of pack data"},
		{"bomb", Limits{MaxObjectBytes: 1 << 20}, "bytes inflated, more than"},
		{"deep", Limits{MaxDeltaDepth: 3}, "delta chain longer than 3"},
		{"slow", Limits{Timeout: 500 * time.Millisecond}, "took longer than"},
	}
	check := recordGit(t, root)
	for _, c := range cases {
		t.Run(c.repo, func(t *testing.T) {
			store := filepath.Join(root, "home", ".corral", "clones", c.repo+".git")
			start := time.Now()
			_, err := Fetch(bg(), base+"/"+c.repo+".git", store, Options{HTTPClient: hc, Limits: c.limits})
			var re *RefusedError
			if !errors.As(err, &re) || !re.Has(ClassLimit) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Fetch: %v, want a limit refusal containing %q", err, c.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("refusal took %v", d)
			}
			assertNothingLeft(t, store)
			// The same repository passes with default limits: the cap, not the data, refused it.
			if c.repo == "slow" {
				return
			}
			if _, err := Fetch(bg(), base+"/"+c.repo+".git", store, Options{HTTPClient: hc}); err != nil {
				t.Errorf("Fetch with default limits: %v", err)
			}
			os.RemoveAll(store)
		})
	}
	check()
}

// stall makes the pack request for paths under prefix hang until the client gives up.
func stall(prefix string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, prefix) && r.Method == http.MethodPost {
				io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
				case <-time.After(30 * time.Second):
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
