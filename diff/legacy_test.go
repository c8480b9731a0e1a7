package diff

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const legacyStamp = "/20261130T004623.607012243Z"

// refNames lists the repository's refs (symbolic ones by their own name).
func refNames(r *testRepo) []string {
	out := r.git("for-each-ref", "--format=%(refname)")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// TestRemoveLegacyRefs: the refs older versions left under refs/corral/sessions/ go, with one
// notice naming how many; every other ref stays, whatever the box planted. Each case's
// "before" check is the control: the same listing sees the refs that then go.
func TestRemoveLegacyRefs(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(r *testRepo)
		gone   []string
		kept   []string
		notice string
	}{
		{name: "loose refs of two boxes", setup: func(r *testRepo) {
			r.git("update-ref", legacyRefPrefix+"box-test"+legacyStamp, "HEAD")
			r.git("update-ref", legacyRefPrefix+"box-old"+legacyStamp, "HEAD")
		}, gone: []string{legacyRefPrefix + "box-test" + legacyStamp, legacyRefPrefix + "box-old" + legacyStamp},
			notice: "removed 2 session base(s)"},
		{name: "packed refs", setup: func(r *testRepo) {
			r.git("update-ref", legacyRefPrefix+"box-test"+legacyStamp, "HEAD")
			r.git("pack-refs", "--all")
		}, gone: []string{legacyRefPrefix + "box-test" + legacyStamp}, notice: "removed 1 session base(s)"},
		{name: "symbolic ref to a branch", setup: func(r *testRepo) {
			r.git("symbolic-ref", legacyRefPrefix+"box-test/x", "refs/heads/main")
		}, gone: []string{legacyRefPrefix + "box-test/x"}, kept: []string{"refs/heads/main"},
			notice: "removed 1 session base(s)"},
		{name: "look-alike refs", setup: func(r *testRepo) {
			for _, ref := range []string{"refs/corral/box-test/main", "refs/corral/sessions-x/y", "refs/heads/sessions/x",
				"refs/tags/corral/sessions/x", "refs/corral/session/x", "refs/heads/refs/corral/sessions/x"} {
				r.git("update-ref", ref, "HEAD")
			}
		}, kept: []string{"refs/corral/box-test/main", "refs/corral/sessions-x/y", "refs/heads/sessions/x",
			"refs/tags/corral/sessions/x", "refs/corral/session/x", "refs/heads/refs/corral/sessions/x"}},
		{name: "none", setup: func(*testRepo) {}, kept: []string{"refs/heads/main"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t, baseFiles)
			tc.setup(r)
			before := refNames(r)
			for _, ref := range slices.Concat(tc.gone, tc.kept) {
				if !slices.Contains(before, ref) {
					t.Fatalf("control: %s missing before removal: %v", ref, before)
				}
			}
			if may := mayHaveLegacyRefs(r.project().CommonDir); may != (len(tc.gone) > 0) {
				t.Errorf("mayHaveLegacyRefs = %v with %d legacy ref(s): git must run when there are some, and only then", may, len(tc.gone))
			}
			r.clearCanary()
			notice := removeLegacyRefs(t.Context(), r.project())
			r.checkCanary("removeLegacyRefs")
			if tc.notice == "" && notice != "" || !strings.Contains(notice, tc.notice) {
				t.Errorf("notice = %q, want one containing %q", notice, tc.notice)
			}
			if tc.notice != "" && !strings.Contains(notice, "git gc --prune=now") {
				t.Errorf("notice %q does not say how the objects go", notice)
			}
			after := refNames(r)
			for _, ref := range tc.gone {
				if slices.Contains(after, ref) {
					t.Errorf("%s survived", ref)
				}
			}
			for _, ref := range before {
				if !slices.Contains(tc.gone, ref) && !slices.Contains(after, ref) {
					t.Errorf("%s was removed; only refs under %s may be", ref, legacyRefPrefix)
				}
			}
			if head := r.git("rev-parse", "refs/heads/main"); head == "" {
				t.Error("refs/heads/main no longer resolves")
			}
			if again := removeLegacyRefs(t.Context(), r.project()); again != "" {
				t.Errorf("a second call gave a notice: %q", again)
			}
			if mayHaveLegacyRefs(r.project().CommonDir) {
				t.Error("mayHaveLegacyRefs after the removal: git would run at every session")
			}
		})
	}
}

// TestLegacyRefsRemovedByRecordAndCompare: Record and Compare both remove the refs and hand
// the notice to their caller.
func TestLegacyRefsRemovedByRecordAndCompare(t *testing.T) {
	r := newRepo(t, baseFiles)
	r.git("update-ref", legacyRefPrefix+"box-test"+legacyStamp, "HEAD")
	rec, err := Record(t.Context(), r.project(), "box-test", BaseOptions{Home: r.home})
	if err != nil || !strings.Contains(rec.Notice, "removed 1 session base(s)") || !strings.HasSuffix(rec.Path, ".base") {
		t.Errorf("Record = %+v, %v; want the path and the notice", rec, err)
	}
	r.git("update-ref", legacyRefPrefix+"box-test"+legacyStamp, "HEAD")
	if rep := r.compare(Options{}); !strings.Contains(rep.Notice, "removed 1 session base(s)") {
		t.Errorf("Compare notice = %q", rep.Notice)
	}
	if refs := refNames(r); slices.ContainsFunc(refs, func(s string) bool { return strings.HasPrefix(s, legacyRefPrefix) }) {
		t.Errorf("legacy refs left: %v", refs)
	}
}

// TestLegacyRefsLocked: when git cannot delete them (a lock is held), the notice says so and
// gives the command; the refs stay and nothing else breaks.
func TestLegacyRefsLocked(t *testing.T) {
	r := newRepo(t, baseFiles)
	ref := legacyRefPrefix + "box-test" + legacyStamp
	r.git("update-ref", ref, "HEAD")
	lock := filepath.Join(r.dir, ".git", filepath.FromSlash(ref)+".lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	notice := removeLegacyRefs(t.Context(), r.project())
	if !strings.Contains(notice, "could not remove the 1 session base(s)") || !strings.Contains(notice, legacyRemoveCmd) {
		t.Errorf("notice = %q", notice)
	}
	if !slices.Contains(refNames(r), ref) {
		t.Error("a failed transaction removed the ref anyway")
	}
	os.Remove(lock)
	if notice := removeLegacyRefs(t.Context(), r.project()); !strings.Contains(notice, "removed 1") {
		t.Errorf("control: without the lock, notice = %q", notice)
	}
}

// TestMayHaveLegacyRefs: what cannot be told from the files asks git: a reftable, something
// unreadable at the prefix, packed-refs that cannot be read; a packed-refs without the prefix
// and no refs/corral/sessions does not.
func TestMayHaveLegacyRefs(t *testing.T) {
	common := t.TempDir()
	if mayHaveLegacyRefs(common) {
		t.Error("an empty git dir: want no git run")
	}
	os.WriteFile(filepath.Join(common, "packed-refs"), []byte("# pack-refs with: peeled\nabc refs/heads/refs/corral/sessions/x\n"), 0o644)
	if mayHaveLegacyRefs(common) {
		t.Error("packed-refs with a look-alike only: want no git run")
	}
	os.WriteFile(filepath.Join(common, "packed-refs"), []byte("abc "+legacyRefPrefix+"b/c\n"), 0o644)
	if !mayHaveLegacyRefs(common) {
		t.Error("packed-refs naming a legacy ref: want git to run")
	}
	os.Remove(filepath.Join(common, "packed-refs"))
	os.Mkdir(filepath.Join(common, "packed-refs"), 0o755) // unreadable as a file
	if !mayHaveLegacyRefs(common) {
		t.Error("packed-refs that cannot be read: want git to run")
	}
	os.Remove(filepath.Join(common, "packed-refs"))
	os.MkdirAll(filepath.Join(common, "refs/corral/sessions"), 0o755)
	if !mayHaveLegacyRefs(common) {
		t.Error("an (even empty) refs/corral/sessions: want git to run")
	}
	other := t.TempDir()
	os.Mkdir(filepath.Join(other, "reftable"), 0o755)
	if !mayHaveLegacyRefs(other) {
		t.Error("a reftable repository: want git to run")
	}
}

func TestLegacyRefsParse(t *testing.T) {
	out := strings.Join([]string{legacyRefPrefix + "a" + legacyStamp, "refs/heads/main", legacyRefPrefix,
		legacyRefPrefix + "../heads/main", legacyRefPrefix + "x y", "", legacyRefPrefix + "b/c"}, "\n")
	got := legacyRefs(out)
	if want := []string{legacyRefPrefix + "a" + legacyStamp, legacyRefPrefix + "b/c"}; !slices.Equal(got, want) {
		t.Errorf("legacyRefs = %q, want %q", got, want)
	}
}
