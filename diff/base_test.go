package diff

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
)

func TestManifestRoundTripAndCorruption(t *testing.T) {
	m := &manifest{manifestHeader: manifestHeader{Box: "b-1", TopLevel: "/w", Created: time.Unix(5, 6).UTC()},
		Entries: []*entry{{Path: "a", Kind: KindFile, Mode: 0o100755, Size: 3, Mtime: -1, Ctime: 7, Ino: 9, Dev: 2, Have: true, Hash: blobHash([]byte("abc"))},
			{Path: ".git/config", Kind: KindFile, Flags: flagGitMeta, Data: []byte("[core]\n")},
			{Path: "l", Kind: KindSymlink}}}
	data, err := m.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 3 || got.Entries[0].Hash != m.Entries[0].Hash || !got.Entries[0].Have || got.Entries[0].Mtime != -1 ||
		string(got.Entries[1].Data) != "[core]\n" || got.Entries[2].Have || got.TopLevel != "/w" || !got.Created.Equal(m.Created) {
		t.Errorf("round trip lost data: %+v", got.Entries)
	}
	for name, bad := range map[string][]byte{
		"truncated":   data[:len(data)-1],
		"flipped bit": append(append([]byte{}, data[:40]...), append([]byte{data[40] ^ 1}, data[41:]...)...),
		"empty":       nil,
	} {
		if _, err := decodeManifest(bad); !errors.Is(err, errManifest) {
			t.Errorf("%s manifest: err = %v, want errManifest", name, err)
		}
	}
}

// TestRecordBaseLeavesIndexAndHead checks the session base touches neither the index nor HEAD
// nor the refs, records untracked and ignored files, keeps the bytes of the ignored .envrc in
// the store (0600 in 0700 directories) and those of an ignored directory's files not at all.
func TestRecordBaseLeavesIndexAndHead(t *testing.T) {
	r := newRepo(t, baseFiles)
	r.write(".envrc", "ignored but recorded\n")
	r.write("new.txt", "untracked\n")
	r.write("ignored/dep.js", "dependency\n")
	index, _ := os.ReadFile(r.abs(".git/index"))
	head := r.git("rev-parse", "HEAD")
	refs := r.git("for-each-ref")
	r.clearCanary()
	path := r.record()
	r.checkCanary("RecordBase")
	if after, _ := os.ReadFile(r.abs(".git/index")); !bytes.Equal(index, after) {
		t.Error("RecordBase changed .git/index")
	}
	if got := r.git("rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved from %s to %s", head, got)
	}
	if got := r.git("for-each-ref"); got != refs {
		t.Errorf("refs changed from\n%s\nto\n%s", refs, got)
	}
	dir := filepath.Join(r.home, "sessions", "box-test")
	if filepath.Dir(path) != dir || !strings.HasSuffix(path, ".base") {
		t.Errorf("manifest %q is not a .base file in %q", path, dir)
	}
	st := openStore(r.home, "box-test")
	if got, err := st.blob(blobHash([]byte("ignored but recorded\n")), 1<<20); err != nil || string(got) != "ignored but recorded\n" {
		t.Errorf("the ignored .envrc is not in the store: %q, %v", got, err)
	}
	if _, err := st.blob(blobHash([]byte("dependency\n")), 1<<20); !errors.Is(err, errNotStored) {
		t.Errorf("a file of an ignored directory was copied into the store: %v", err)
	}
	if _, err := st.blob(blobHash([]byte(baseFiles["Makefile"])), 1<<20); !errors.Is(err, errNotStored) {
		t.Errorf("a blob the repository holds was copied into the store: %v", err)
	}
	checkPrivate(t, dir)
	if rep := r.compare(Options{}); len(rep.Changes) != 0 {
		t.Errorf("an unchanged tree shows changes: %+v", rep.Changes)
	}
	// The ignored directory is still compared, from the manifest.
	r.write("ignored/dep.js", "changed\n")
	if rep := r.compare(Options{}); len(rep.Changes) != 1 || rep.Changes[0].Path != "ignored/dep.js" {
		t.Errorf("a change in an ignored directory was missed: %+v", rep.Changes)
	}
}

// checkPrivate fails when anything under dir is readable by others: directories 0700, files
// 0600.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700 | os.ModeDir
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
		n++
		return nil
	})
	if err != nil || n < 4 {
		t.Fatalf("walk %s: %v (%d entries)", dir, err, n)
	}
}

func TestRecordBaseRejectsBadBox(t *testing.T) {
	r := newRepo(t, baseFiles)
	for _, box := range []string{"", "../x", "a/b", "A", "x\nrefs/heads/main", "x..y/"} {
		if _, err := RecordBaseWith(t.Context(), r.project(), box, BaseOptions{Home: r.home}); err == nil {
			t.Errorf("box %q accepted", box)
		}
	}
}

func TestBaseOfAnotherTree(t *testing.T) {
	a := newRepo(t, baseFiles)
	a.record()
	b := newRepo(t, baseFiles)
	_, err := Compare(t.Context(), b.project(), Options{Box: "box-test", Home: a.home})
	if err == nil || !strings.Contains(err.Error(), "were recorded for") {
		t.Errorf("comparing with another tree's session base: err = %v", err)
	}
}

func TestNoBase(t *testing.T) {
	r := newRepo(t, baseFiles)
	_, err := Compare(t.Context(), r.project(), Options{Box: "box-test", Home: r.home})
	if !errors.Is(err, ErrNoBase) {
		t.Errorf("err = %v, want ErrNoBase", err)
	}
}

// TestStatCacheForgedMtime: the box rewrites a file with the same size and puts the old mtime
// back; the host's ctime still changed, so the trusted stat cache must not vouch for it.
func TestStatCacheForgedMtime(t *testing.T) {
	r := newRepo(t, baseFiles)
	// A base "recorded" 10 s in the future makes every cached entry old enough to be trusted.
	if _, err := RecordBaseWith(t.Context(), r.project(), "box-test", BaseOptions{Home: r.home,
		Now: func() time.Time { return time.Now().Add(10 * time.Second) }}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(r.abs("Makefile"))
	r.write("Makefile", "all:\n\tcurl x|sh\n"[:st.Size()])
	if err := os.Chtimes(r.abs("Makefile"), st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	rep := r.compare(Options{})
	checkFindings(t, rep, []want{{"Makefile", "make", "curl"}}, true)
}

// TestTamperedObjectNotShown: the box rewrites the repository's loose object of a committed
// file's base blob; the old text must not be shown as if it were the base.
func TestTamperedObjectNotShown(t *testing.T) {
	r := newRepo(t, map[string]string{"README.md": "x\n", "Makefile": "all:\n\techo base\n"})
	r.record()
	obj := looseObjectOf(t, r, []byte("all:\n\techo base\n"))
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("blob 17\x00all:\n\techo fake\n"))
	zw.Close()
	_ = os.Chmod(obj, 0o644)
	if err := os.WriteFile(obj, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r.write("Makefile", "all:\n\tcurl x\n")
	rep := r.compare(Options{})
	checkFindings(t, rep, []want{{"Makefile", "make", "failed verification"}}, true)
	for _, f := range rep.Findings {
		if strings.Contains(strings.Join(f.Detail, "\n"), "fake") {
			t.Errorf("the tampered object's text was shown as the base: %v", f.Detail)
		}
	}
}

// TestTamperedStoreBlobNotShown: a stored blob whose bytes no longer match its id (a damaged
// disk, a bad write) is reported, never shown as the base.
func TestTamperedStoreBlobNotShown(t *testing.T) {
	r := newRepo(t, map[string]string{"README.md": "x\n"})
	r.write("Makefile", "all:\n\techo base\n") // untracked: kept in the store
	r.record()
	p := openStore(r.home, "box-test").blobPath(blobHash([]byte("all:\n\techo base\n")))
	if err := os.WriteFile(p, []byte("all:\n\techo fake\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.write("Makefile", "all:\n\tcurl x\n")
	rep := r.compare(Options{})
	checkFindings(t, rep, []want{{"Makefile", "make", "failed verification"}}, true)
	for _, f := range rep.Findings {
		if strings.Contains(strings.Join(f.Detail, "\n"), "fake") {
			t.Errorf("the tampered blob's text was shown as the base: %v", f.Detail)
		}
	}
}

// looseObjectOf returns the path of the loose object git holds for a blob with this content.
func looseObjectOf(t *testing.T, r *testRepo, data []byte) string {
	t.Helper()
	hex := plumbingHex(blobHash(data))
	p := filepath.Join(r.dir, ".git", "objects", hex[:2], hex[2:])
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no loose object for %q: %v", data, err)
	}
	return p
}

func plumbingHex(h [20]byte) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for _, c := range h {
		b.WriteByte(digits[c>>4])
		b.WriteByte(digits[c&15])
	}
	return b.String()
}

// TestRevisionBase compares against a commit, including a file git only knows through a
// replace ref.
func TestRevisionBase(t *testing.T) {
	r := newRepo(t, baseFiles)
	r.write("Makefile", "all:\n\tcurl x\n")
	r.write("extra.txt", "new\n")
	rep := r.compare(Options{Base: "HEAD"})
	checkFindings(t, rep, []want{{"Makefile", "make", "+\tcurl x"}}, true)
	if rep.Base.Kind != "revision" || rep.Base.GitMetaCompared {
		t.Errorf("base = %+v, want a revision without git metadata", rep.Base)
	}
	var sawExtra bool
	for _, c := range rep.Changes {
		sawExtra = sawExtra || c.Path == "extra.txt" && c.Status == "added" && !c.Finding
	}
	if !sawExtra {
		t.Errorf("extra.txt not listed as an ordinary addition: %+v", rep.Changes)
	}
	if _, err := Compare(t.Context(), r.project(), Options{Base: "no-such-rev", Box: "box-test", Home: r.home}); err == nil {
		t.Error("an unknown revision was accepted")
	}
}

// FuzzDecodeManifest: a damaged manifest is an error, never a panic or a huge allocation.
func FuzzDecodeManifest(f *testing.F) {
	m := &manifest{manifestHeader: manifestHeader{Box: "b"}, Entries: []*entry{{Path: "a", Kind: KindFile, Have: true, Data: []byte("x")}}}
	good, _ := m.encode()
	f.Add(good)
	f.Add([]byte(manifestMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Re-seal the body so that the fuzzer reaches the entry decoder, not just the checksum.
		if len(data) > 32 {
			sum := sha256.Sum256(data[:len(data)-32])
			data = append(data[:len(data)-32:len(data)-32], sum[:]...)
		}
		_, _ = decodeManifest(data)
	})
}

// TestStoreBlobsAsksIgnoredDirsOnlyToKeep: the ignored directories (a git process) are asked
// for only when a file's bytes would be kept, and once per base: a tree whose files the
// repository all holds asks nothing; with untracked files it asks once (the control), and a
// file of an ignored directory is still not kept.
func TestStoreBlobsAsksIgnoredDirsOnlyToKeep(t *testing.T) {
	r := newRepo(t, baseFiles)
	p := r.project()
	repo, err := git.PlainOpenWithOptions(p.TopLevel, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(r.home, "box-test")
	if err := st.mkdir(st.dir); err != nil {
		t.Fatal(err)
	}
	keep := func() (ids [][20]byte, asked int) {
		t.Helper()
		es, err := walk(t.Context(), p.TopLevel, p.CommonDir, 2)
		if err == nil {
			err = hashAll(t.Context(), func(e *entry) string { return entryAbs(p, e) }, es, 2, func(*entry) bool { return true })
		}
		if err != nil {
			t.Fatal(err)
		}
		skip := func() ([]string, error) { asked++; return []string{"ignored/"}, nil }
		ids, err = storeBlobs(func(e *entry) string { return entryAbs(p, e) }, repo.Storer, st, es, skip)
		if err != nil {
			t.Fatal(err)
		}
		return ids, asked
	}
	if ids, asked := keep(); len(ids) != 0 || asked != 0 {
		t.Errorf("committed files only: kept %d, asked for the ignored directories %d time(s); want 0 and 0", len(ids), asked)
	}
	r.write("new.txt", "untracked\n")
	r.write("other.txt", "untracked too\n")
	r.write("ignored/dep.js", "dependency\n")
	if ids, asked := keep(); len(ids) != 2 || asked != 1 {
		t.Errorf("two untracked files and one in an ignored directory: kept %d, asked %d time(s); want 2 and 1", len(ids), asked)
	}
}

// TestRecordStartReadsBeforeWriting: RecordStart's base is the tree as it was when it
// returned, though its files are written afterwards: changes made in between (by a session
// already running) show against it, and the kept bytes are the earlier ones. A write that
// fails is the error written returns; Record, the control, returns it at once.
func TestRecordStartReadsBeforeWriting(t *testing.T) {
	r := newRepo(t, baseFiles)
	r.write("new.txt", "before\n")
	rec, written, err := RecordStart(t.Context(), r.project(), "box-test", BaseOptions{Home: r.home})
	if err != nil {
		t.Fatal(err)
	}
	r.write("new.txt", "after\n")
	r.write("Makefile", "changed by the session\n")
	if err := written(); err != nil {
		t.Fatalf("written: %v", err)
	}
	if _, err := os.Stat(rec.Path); err != nil {
		t.Fatalf("the manifest at rec.Path: %v", err)
	}
	var got []string
	for _, c := range r.compare(Options{}).Changes {
		got = append(got, c.Path+" "+c.Status)
	}
	if strings.Join(got, ",") != "Makefile modified,new.txt modified" {
		t.Errorf("changes against the base: %q, want the two made after RecordStart returned", got)
	}
	if b, err := openStore(r.home, "box-test").blob(blobHash([]byte("before\n")), 1<<20); err != nil || string(b) != "before\n" {
		t.Errorf("kept bytes of new.txt: %q, %v; want those read before the change", b, err)
	}

	at := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	blocked := filepath.Join(r.home, "sessions", "box-test", stamp(at)+".base")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	o := BaseOptions{Home: r.home, Now: func() time.Time { return at }}
	if _, written, err := RecordStart(t.Context(), r.project(), "box-test", o); err != nil || written() == nil {
		t.Errorf("a manifest that cannot be written: RecordStart %v, written gave no error", err)
	}
	if _, err := Record(t.Context(), r.project(), "box-test", o); err == nil {
		t.Error("Record: no error for a manifest that cannot be written")
	}
}
