package clone

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// refNames returns n names under prefix.
func refNames(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%04d", prefix, i))
	}
	return out
}

// addRefsStdin creates each name in the repository at dir, pointing at HEAD, in one update-ref.
func addRefsStdin(t *testing.T, dir string, names []string) {
	t.Helper()
	head := git(t, dir, "rev-parse", "HEAD")
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "create %s %s\n", n, head)
	}
	cmd := exec.Command(realGit, "update-ref", "--stdin")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v: %s", err, out)
	}
}

// wantRefCap fails t unless err is a limit refusal naming the ref cap.
func wantRefCap(t *testing.T, err error, want string) {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) || !re.Has(ClassLimit) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Fetch: %v, want a ref cap refusal containing %q", err, want)
	}
}

// TestRefCaps: a source listing more branches and tags than Limits.MaxRefs, or more refs in all
// than ten times that, is refused before any ref is kept, over every transport: a local path
// (loose refs, then the same refs packed) and https (counted as the advertisement arrives). The
// same repository passes with the default cap.
func TestRefCaps(t *testing.T) {
	root := hermetic(t)
	l := Limits{MaxRefs: 20}
	cases := []struct {
		name  string
		refs  []string
		want  string
		packs bool
	}{
		{"branches", refNames("refs/heads/b", 21), "more than 20 branches and tags (cap: Limits.MaxRefs = 20); nothing was fetched", false},
		{"tags packed", refNames("refs/tags/v", 21), "more than 20 branches and tags", true},
		{"other refs", refNames("refs/pull/", 201), "more than 200 refs in all (cap: 10 × Limits.MaxRefs = 200;", false},
		{"other refs packed", refNames("refs/pull/", 201), "more than 200 refs in all", true},
	}
	check := recordGit(t, root)
	for i, c := range cases {
		t.Run("local "+c.name, func(t *testing.T) {
			work := filepath.Join(root, fmt.Sprintf("work%d", i))
			makeRepo(t, work, map[string]string{"README": "hi\n"})
			addRefsStdin(t, work, c.refs)
			if c.packs {
				git(t, work, "pack-refs", "--all")
			}
			store := filepath.Join(root, "home", ".corral", "clones", fmt.Sprintf("refs%d.git", i))
			_, err := Fetch(bg(), work, store, Options{Limits: l})
			wantRefCap(t, err, c.want)
			assertNothingLeft(t, store)
			if _, err := Fetch(bg(), work, store, Options{}); err != nil {
				t.Fatalf("the same repository with the default cap: %v", err)
			}
			os.RemoveAll(store)
		})
	}
	work := filepath.Join(root, "served")
	makeRepo(t, work, map[string]string{"README": "hi\n"})
	bareCopy(t, root, work, "r")
	hash := git(t, work, "rev-parse", "HEAD")
	for i, c := range cases[:3:3] {
		t.Run("https "+c.name, func(t *testing.T) {
			base, hc := serveHTTPS(t, filepath.Join(root, "srv"), advertiseExtra(c.refs, hash))
			store := filepath.Join(root, "home", ".corral", "clones", fmt.Sprintf("https%d.git", i))
			_, err := Fetch(bg(), base+"/r.git", store, Options{HTTPClient: hc, Limits: l})
			wantRefCap(t, err, c.want)
			assertNothingLeft(t, store)
			if _, err := Fetch(bg(), base+"/r.git", store, Options{HTTPClient: hc}); err != nil {
				t.Fatalf("the same advertisement with the default cap: %v", err)
			}
			os.RemoveAll(store)
		})
	}
	check()
}

// endlessAdvertisement is a smart-HTTP ref advertisement that never ends: one branch line after
// another, as a hostile server could send.
type endlessAdvertisement struct {
	n   int
	buf []byte
}

func (e *endlessAdvertisement) Read(p []byte) (int, error) {
	if len(e.buf) == 0 {
		if e.n == 0 {
			e.buf = []byte("001e# service=git-upload-pack\n0000")
		} else {
			line := fmt.Sprintf("%s refs/heads/b%09d\n", strings.Repeat("a", 40), e.n)
			e.buf = fmt.Appendf(nil, "%04x%s", len(line)+4, line)
		}
		e.n++
	}
	k := copy(p, e.buf)
	e.buf = e.buf[k:]
	return k, nil
}

// TestAdvertisementCountedAsItArrives: the https ref count stops an endless advertisement after
// the first ref over the cap, having read no more than that; a finite advertisement within the
// cap passes through unchanged.
func TestAdvertisementCountedAsItArrives(t *testing.T) {
	src := &endlessAdvertisement{}
	c := &advCounter{r: src, t: newRefTally(Limits{MaxRefs: 1000})}
	n, err := io.Copy(io.Discard, c)
	wantRefCap(t, err, "more than 1000 branches and tags")
	if src.n > 1002 || n > 34+1000*67 {
		t.Errorf("read %d lines (%d bytes) before refusing, want about 1001", src.n, n)
	}
	var finite bytes.Buffer
	io.CopyN(&finite, &endlessAdvertisement{}, 34+999*67) // the service line, then 999 refs of 67 bytes
	finite.WriteString("0000")
	var out bytes.Buffer
	c = &advCounter{r: bytes.NewReader(finite.Bytes()), t: newRefTally(Limits{MaxRefs: 1000})}
	if _, err := io.Copy(&out, c); err != nil || !bytes.Equal(out.Bytes(), finite.Bytes()) {
		t.Errorf("finite advertisement of 999 refs: %v (passed through unchanged: %v)", err, bytes.Equal(out.Bytes(), finite.Bytes()))
	}
	if c.t.taken != 999 {
		t.Errorf("counted %d refs, want 999", c.t.taken)
	}
}
