package diff

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
)

// recordAt records a base of box stamped at t.
func (r *testRepo) recordAt(box string, t time.Time) string {
	r.t.Helper()
	p, err := RecordBaseWith(r.t.Context(), r.project(), box, BaseOptions{Home: r.home, Now: func() time.Time { return t }})
	if err != nil {
		r.t.Fatalf("RecordBase: %v", err)
	}
	return p
}

// storeFiles lists the .base and .blobs files of a box's store.
func storeFiles(t *testing.T, st store) (bases, lists []string) {
	t.Helper()
	names, err := readNames(st.dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, ".base"):
			bases = append(bases, n)
		case strings.HasSuffix(n, ".blobs"):
			lists = append(lists, n)
		}
	}
	return bases, lists
}

// ageObjects makes every stored blob older than the sweep's grace period.
func ageObjects(t *testing.T, st store) {
	t.Helper()
	old := time.Now().Add(-2 * sweepGrace)
	_ = filepath.WalkDir(st.objects(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
}

// TestPruneKeepsNewest: a box keeps its newest keepBases bases; the blobs only pruned bases
// used go once they are past the grace period, those of kept bases stay, and the newest base
// still shows its old content.
func TestPruneKeepsNewest(t *testing.T) {
	r := newRepo(t, baseFiles)
	st := openStore(r.home, "box-test")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var paths []string
	for i := range keepBases + 3 {
		r.write("notes.txt", "version "+itoa(i)+"\n") // untracked: one stored blob per base
		paths = append(paths, r.recordAt("box-test", t0.Add(time.Duration(i)*time.Minute)))
		ageObjects(t, st)
	}
	bases, lists := storeFiles(t, st)
	var want []string
	for _, p := range paths[len(paths)-keepBases:] {
		want = append(want, filepath.Base(p))
	}
	if !slices.Equal(bases, want) || len(lists) != keepBases {
		t.Errorf("kept bases %v and lists %v, want %v and %d lists", bases, lists, want, keepBases)
	}
	for i := range keepBases + 3 {
		_, err := st.blob(blobHash([]byte("version "+itoa(i)+"\n")), 1<<20)
		if kept := i >= 3; kept != (err == nil) {
			t.Errorf("blob of base %d: kept %v, err %v", i, kept, err)
		}
	}
	r.write("notes.txt", "changed\n")
	rep := r.compare(Options{All: true})
	if len(rep.Changes) != 1 || !slices.Contains(rep.Changes[0].Detail, "-version "+itoa(keepBases+2)) {
		t.Errorf("the newest base's content is not shown: %+v", rep.Changes)
	}
}

// TestSweepSparesYoungBlobs: a blob no list names yet (a record running at the same time) stays
// while it is younger than the grace period, and goes after it; a blob a kept list names stays
// whatever its age.
func TestSweepSparesYoungBlobs(t *testing.T) {
	st := openStore(t.TempDir(), "box-test")
	if err := st.mkdir(st.dir); err != nil {
		t.Fatal(err)
	}
	listed, young, old := []byte("listed\n"), []byte("young\n"), []byte("old\n")
	for _, b := range [][]byte{listed, young, old} {
		if err := st.putBlob(blobHash(b), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.writeList("20260101T000000.000000000Z", [][20]byte{blobHash(listed)}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * sweepGrace)
	for _, b := range [][]byte{listed, old} {
		if err := os.Chtimes(st.blobPath(blobHash(b)), past, past); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.prune(keepBases); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data []byte
		kept bool
	}{{listed, true}, {young, true}, {old, false}} {
		if _, err := st.blob(blobHash(c.data), 100); c.kept != (err == nil) {
			t.Errorf("blob %q: want kept %v, err %v", c.data, c.kept, err)
		}
	}
}

// TestPruneBox: PruneBox removes every base of the box (manifests, lists, stored copies of
// ignored files), leaves other boxes alone, accepts a box without bases and refuses a name
// that would leave the store.
func TestPruneBox(t *testing.T) {
	r := newRepo(t, map[string]string{".gitignore": ".env\n"})
	r.write(".env", secret)
	r.recordAt("box-test", time.Now())
	other := r.recordAt("box-other", time.Now())
	h := home.Home{Dir: r.home}
	if _, err := os.Stat(h.SessionBases("box-test")); err != nil {
		t.Fatalf("control: no session bases before pruning: %v", err)
	}
	if err := PruneBox(h, "box-test"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.SessionBases("box-test")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the box's session bases survived PruneBox: %v", err)
	}
	if _, err := Compare(t.Context(), r.project(), Options{Box: "box-test", Home: r.home}); !errors.Is(err, ErrNoBase) {
		t.Errorf("after PruneBox: err = %v, want ErrNoBase", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another box's base was removed: %v", err)
	}
	if err := PruneBox(h, "box-none"); err != nil {
		t.Errorf("a box without bases: %v", err)
	}
	for _, box := range []string{"", "..", "../box-other", "a/b", "."} {
		if err := PruneBox(h, box); err == nil {
			t.Errorf("box %q accepted", box)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a bad box name removed another box's base: %v", err)
	}
}
