package clone

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// packEntryHeader encodes a pack entry's type and size as git does.
func packEntryHeader(typ byte, size int) []byte {
	b := []byte{typ<<4 | byte(size&15)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&127))
		size >>= 7
	}
	return b
}

// ofsOffset encodes a negative offset as git's offset deltas do.
func ofsOffset(n int) []byte {
	b := []byte{byte(n & 127)}
	for n >>= 7; n > 0; n >>= 7 {
		n--
		b = append([]byte{byte(128 | n&127)}, b...)
	}
	return b
}

func deflate(data []byte) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func uvarint(n uint64) []byte { return binary.AppendUvarint(nil, n) }

// deltaBombPack is a pack of a small blob and an offset delta against it that declares a result
// of result bytes: a few bytes on the wire that would expand without bound if resolved.
func deltaBombPack(result uint64) []byte {
	base := []byte("base content\n")
	delta := append(append(uvarint(uint64(len(base))), uvarint(result)...), 0x01, 'x')
	var p bytes.Buffer
	p.WriteString("PACK")
	binary.Write(&p, binary.BigEndian, uint32(2))
	binary.Write(&p, binary.BigEndian, uint32(2))
	first := p.Len()
	p.Write(packEntryHeader(3, len(base)))
	p.Write(deflate(base))
	second := p.Len()
	p.Write(packEntryHeader(6, len(delta)))
	p.Write(ofsOffset(second - first))
	p.Write(deflate(delta))
	sum := sha1.Sum(p.Bytes())
	p.Write(sum[:])
	return p.Bytes()
}

// TestDeltaBombRefused: a delta whose declared result exceeds MaxObjectBytes is refused from its
// header, before go-git resolves it; the same pack shape with an honest size passes the scan.
func TestDeltaBombRefused(t *testing.T) {
	hermetic(t)
	host := filepath.Join(t.TempDir(), "host.git")
	git(t, filepath.Dir(host), "init", "-q", "--bare", host)
	bundle := func(pack []byte) []byte {
		return append([]byte("# v2 git bundle\n"+strings.Repeat("1", 40)+" refs/heads/main\n\n"), pack...)
	}
	_, err := FetchBack(bg(), cannedGuest{bundle(deltaBombPack(1 << 40))}, host, FetchBackOptions{Dir: "/box/p", Box: "b"})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "a delta expands to 1099511627776 bytes") {
		t.Fatalf("delta bomb: %v, want a delta size refusal", err)
	}
	// The honest pack scans and stores; it is refused later only because its ref names no object.
	_, err = FetchBack(bg(), cannedGuest{bundle(deltaBombPack(1))}, host, FetchBackOptions{Dir: "/box/p", Box: "b"})
	if !errors.As(err, &re) || !re.Has(ClassRef) || re.Has(ClassLimit) {
		t.Fatalf("honest delta: %v, want only the missing-ref refusal", err)
	}
}

// TestTreeShapeLimits: nesting and path length caps refuse, and the same repository passes with
// the defaults.
func TestTreeShapeLimits(t *testing.T) {
	root := hermetic(t)
	work := filepath.Join(root, "work")
	deep := strings.Repeat("d/", 12) + "f"
	long := "dir/" + strings.Repeat("n", 200)
	makeRepo(t, work, map[string]string{deep: "x", long: "y"})
	cases := []struct {
		l    Limits
		want string
	}{
		{Limits{MaxTreeDepth: 5}, "nests deeper than 5"},
		{Limits{MaxPathBytes: 100}, "longer than 100 bytes"},
	}
	for _, c := range cases {
		store := filepath.Join(root, "home", ".corral", "clones", "shape.git")
		_, err := Fetch(bg(), work, store, Options{Limits: c.l})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Fetch with %+v: %v, want %q", c.l, err, c.want)
		}
		assertNothingLeft(t, store)
		if _, err := Fetch(bg(), work, store, Options{}); err != nil {
			t.Errorf("default limits: %v", err)
		}
		os.RemoveAll(store)
	}
}
