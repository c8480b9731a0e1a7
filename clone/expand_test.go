package clone

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// looseZlib is a loose object file: header then body, deflated; with corrupt set, the stream
// ends after the header in bytes that are not deflate data, so that any attempt to inflate the
// body fails with a zlib error instead of the size refusal under test.
func looseZlib(header string, body []byte, corrupt bool) []byte {
	var b bytes.Buffer
	w, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	w.Write([]byte(header))
	if corrupt {
		w.Flush()
		return append(b.Bytes(), bytes.Repeat([]byte{0xff}, 64)...)
	}
	w.Write(body)
	w.Close()
	return b.Bytes()
}

// writeLoose stores data as the loose object file of h in gitDir, whatever h's real content.
func writeLoose(t *testing.T, gitDir string, h plumbing.Hash, data []byte) {
	t.Helper()
	p := filepath.Join(gitDir, "objects", h.String()[:2], h.String()[2:])
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, data, 0o444))
}

// fakeHash is a hash no real content has, for an object whose content lies.
func fakeHash(s string) plumbing.Hash { return plumbing.Hash(sha1.Sum([]byte("fake " + s))) }

// localWithBlob makes a local repository whose main commit's tree holds "f" → h.
func localWithBlob(t *testing.T, root, name string, h plumbing.Hash) string {
	t.Helper()
	dir := filepath.Join(root, name)
	git(t, root, "init", "-q", "--bare", dir)
	rawCommit(t, dir, rawTree(t, dir, entry{"100644", "f", h}))
	return dir
}

// TestLocalLooseObjectCaps: a local source's loose objects are held to the object size cap from
// their header, before the body is inflated (a corrupt body after an oversized header is refused
// by size, which proves the body was never inflated), and a body running past its declared size
// is cut there. Each case has a control: the same repository shape with an honest object passes.
func TestLocalLooseObjectCaps(t *testing.T) {
	root := hermetic(t)
	zeros := make([]byte, 8<<20)
	cases := []struct {
		name   string
		data   []byte
		limits Limits
		want   string
	}{
		{"red team: 600 MiB declared, default caps", looseZlib("blob 629145600\x00", nil, true), Limits{}, "declares 629145600 bytes, more than 536870912"},
		{"zlib bomb, honest header", looseZlib("blob 8388608\x00", zeros, false), Limits{MaxObjectBytes: 1 << 20}, "declares 8388608 bytes, more than 1048576"},
		{"body past its declared size", looseZlib("blob 10\x00", zeros, false), Limits{}, "inflates past the 10 bytes its header declares"},
		{"tree bomb", looseZlib("tree 629145600\x00", nil, true), Limits{}, "declares 629145600 bytes"},
		{"commit bomb", looseZlib("commit 629145600\x00", nil, true), Limits{}, "declares 629145600 bytes"},
		{"header without end", looseZlib("blob "+strings.Repeat("1", 1<<20), nil, false), Limits{}, "header longer than 32 bytes"},
	}
	check := recordGit(t, root)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := fakeHash(c.name)
			src := localWithBlob(t, root, fmt.Sprintf("src%d", i), h)
			writeLoose(t, src, h, c.data)
			store := filepath.Join(root, "home", ".corral", "clones", fmt.Sprintf("loose%d.git", i))
			start := time.Now()
			_, err := Fetch(bg(), src, store, Options{Limits: c.limits})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Fetch: %v, want a refusal containing %q", err, c.want)
			}
			if strings.Contains(c.want, "declares") || strings.Contains(c.want, "past") {
				var re *RefusedError
				if !errors.As(err, &re) || !re.Has(ClassLimit) {
					t.Errorf("Fetch: %v, want a limit refusal", err)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusal took %v", d)
			}
			assertNothingLeft(t, store)
		})
	}
	t.Run("control: honest loose objects", func(t *testing.T) {
		h := plumbing.ComputeHash(plumbing.BlobObject, zeros[:1<<20])
		src := localWithBlob(t, root, "honest", h)
		rawObject(t, src, plumbing.BlobObject, zeros[:1<<20])
		store := filepath.Join(root, "home", ".corral", "clones", "honest.git")
		if _, err := Fetch(bg(), src, store, Options{Limits: Limits{MaxObjectBytes: 1 << 20}}); err != nil {
			t.Fatalf("honest loose objects at the cap: %v", err)
		}
	})
	check()
}

// packIndex builds a version 2 pack index for pack, whose objects are hashes at offsets.
func packIndex(pack []byte, objs map[plumbing.Hash]int) []byte {
	var hashes []plumbing.Hash
	for h := range objs {
		hashes = append(hashes, h)
	}
	sort.Slice(hashes, func(i, j int) bool { return bytes.Compare(hashes[i][:], hashes[j][:]) < 0 })
	var b bytes.Buffer
	b.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	for i := 0; i < 256; i++ {
		n := 0
		for _, h := range hashes {
			if int(h[0]) <= i {
				n++
			}
		}
		binary.Write(&b, binary.BigEndian, uint32(n))
	}
	for _, h := range hashes {
		b.Write(h[:])
	}
	for range hashes {
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(nil))
	}
	for _, h := range hashes {
		binary.Write(&b, binary.BigEndian, uint32(objs[h]))
	}
	b.Write(pack[len(pack)-20:])
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// localWithPack makes a local repository holding pack (and idx, or one built by packIndex) whose
// main commit's tree holds "f" → h.
func localWithPack(t *testing.T, root, name string, pack, idx []byte, h plumbing.Hash) string {
	t.Helper()
	dir := localWithBlob(t, root, name, h)
	base := filepath.Join(dir, "objects", "pack", fmt.Sprintf("pack-%x", pack[len(pack)-20:]))
	must(t, os.MkdirAll(filepath.Dir(base), 0o755))
	must(t, os.WriteFile(base+".pack", pack, 0o444))
	must(t, os.WriteFile(base+".idx", idx, 0o444))
	return dir
}

// TestLocalPackCaps: a local source's packs get the scan a received pack gets, before go-git
// reads them: a delta's declared result, the delta chain depth, and an index that lists more
// objects than its pack holds. The honest delta and the same deep history pass with the defaults.
func TestLocalPackCaps(t *testing.T) {
	root := hermetic(t)
	baseBlob := []byte("base content\n")
	second := packHeaderLen + len(packEntryHeader(3, len(baseBlob))) + len(deflate(baseBlob))
	deltaPack := func(result uint64, deltaHash plumbing.Hash) ([]byte, []byte) {
		pack := deltaBombPack(result)
		objs := map[plumbing.Hash]int{plumbing.ComputeHash(plumbing.BlobObject, baseBlob): packHeaderLen, deltaHash: second}
		return pack, packIndex(pack, objs)
	}
	check := recordGit(t, root)
	store := filepath.Join(root, "home", ".corral", "clones", "pack.git")
	fetch := func(src string, l Limits) error {
		t.Helper()
		_, err := Fetch(bg(), src, store, Options{Limits: l})
		if err != nil {
			assertNothingLeft(t, store)
		}
		return err
	}

	t.Run("delta bomb", func(t *testing.T) {
		h := fakeHash("delta bomb")
		pack, idx := deltaPack(64<<20, h)
		err := fetch(localWithPack(t, root, "bomb", pack, idx, h), Limits{MaxObjectBytes: 1 << 20})
		var re *RefusedError
		if !errors.As(err, &re) || !re.Has(ClassLimit) || !strings.Contains(err.Error(), "a delta expands to 67108864 bytes") {
			t.Fatalf("Fetch: %v, want a delta size refusal", err)
		}
		// The control: the same pack shape with an honest delta (result "x") is read and stored.
		x := plumbing.ComputeHash(plumbing.BlobObject, []byte("x"))
		pack, idx = deltaPack(1, x)
		if err := fetch(localWithPack(t, root, "honest", pack, idx, x), Limits{MaxObjectBytes: 1 << 20}); err != nil {
			t.Fatalf("honest delta in a local pack: %v", err)
		}
		os.RemoveAll(store)
	})

	t.Run("index lies about its count", func(t *testing.T) {
		x := plumbing.ComputeHash(plumbing.BlobObject, []byte("x"))
		pack, idx := deltaPack(1, x)
		lie := bytes.Clone(idx)
		for i := 8 + 4*0xf0; i < 8+1024; i += 4 {
			binary.BigEndian.PutUint32(lie[i:], 1<<20)
		}
		err := fetch(localWithPack(t, root, "lie", pack, lie, x), Limits{})
		if err == nil || !strings.Contains(err.Error(), "lists 1048576 objects") {
			t.Fatalf("Fetch: %v, want the index refused", err)
		}
	})

	t.Run("delta chain depth", func(t *testing.T) {
		// As in TestFetchLimits: each version rewrites one block of random data, so each one's
		// cheapest base is its neighbour and repack builds long chains.
		work := filepath.Join(root, "deep")
		makeRepo(t, work, map[string]string{"grow": ""})
		data := make([]byte, 40<<10)
		rand.Read(data)
		for i := range 40 {
			rand.Read(data[i<<10 : (i+1)<<10])
			must(t, os.WriteFile(filepath.Join(work, "grow"), data, 0o644))
			git(t, work, "commit", "-q", "-am", fmt.Sprint(i))
		}
		git(t, work, "repack", "-adfq", "--depth=50", "--window=50")
		err := fetch(work, Limits{MaxDeltaDepth: 3})
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "delta chain longer than 3") {
			t.Fatalf("Fetch: %v, want the local pack's delta chain refused", err)
		}
		if err := fetch(work, Limits{}); err != nil {
			t.Fatalf("the same history with the default depth: %v", err)
		}
		os.RemoveAll(store)
	})
	check()
}

// refDeltaPack is a pack of a ref delta (result "x") against a blob that comes after it, as
// "git index-pack --fix-thin" appends the bases of a thin pack; base names the delta's base.
func refDeltaPack(base plumbing.Hash) []byte {
	blobData := []byte("base content\n")
	delta := append(append(uvarint(uint64(len(blobData))), uvarint(1)...), 0x01, 'x')
	var p bytes.Buffer
	p.WriteString("PACK")
	binary.Write(&p, binary.BigEndian, uint32(2))
	binary.Write(&p, binary.BigEndian, uint32(2))
	p.Write(packEntryHeader(7, len(delta)))
	p.Write(base[:])
	p.Write(deflate(delta))
	p.Write(packEntryHeader(3, len(blobData)))
	p.Write(deflate(blobData))
	sum := sha1.Sum(p.Bytes())
	p.Write(sum[:])
	return p.Bytes()
}

// TestScanForwardRefDelta: a local pack may hold a ref delta whose base comes later in the pack
// (git's fixed thin packs do); a received pack may not, and in neither may the base be missing.
func TestScanForwardRefDelta(t *testing.T) {
	dir := t.TempDir()
	scan := func(pack []byte, forward bool) error {
		p := filepath.Join(dir, "p.pack")
		must(t, os.WriteFile(p, pack, 0o644))
		f, err := os.Open(p)
		must(t, err)
		defer f.Close()
		return scanPackFile(bg(), f, DefaultLimits(), forward)
	}
	good := refDeltaPack(plumbing.ComputeHash(plumbing.BlobObject, []byte("base content\n")))
	if err := scan(good, true); err != nil {
		t.Errorf("local pack with a forward ref delta: %v", err)
	}
	if err := scan(good, false); err == nil || !strings.Contains(err.Error(), "ref delta") {
		t.Errorf("received pack with a forward ref delta: %v, want refused", err)
	}
	missing := refDeltaPack(fakeHash("missing base"))
	if err := scan(missing, true); err == nil || !strings.Contains(err.Error(), "is not a whole object in the pack") {
		t.Errorf("local pack with a ref delta against nothing: %v, want refused", err)
	}
}
