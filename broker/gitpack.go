package broker

// Pack rules: how the broker learns, without the upstream's objects, that an update is a
// fast-forward. It reads the pack a push carries, object by object, exactly as the upstream
// will: the header ("PACK", version 2 or 3, the object count), each object's type, size and
// zlib stream (inflated to its declared size, never beyond), offset and reference deltas
// applied when their base is a commit of the same pack, and the trailing checksum over every
// byte before it. It names each commit by hashing it as git does and keeps its parents (the
// "parent" lines right after "tree", as git parses them).
//
// An update OLD → NEW is proven a fast-forward when NEW is a commit of the pack and a chain of
// parents through commits of the pack reaches OLD. Since the broker hashed those commits
// itself, the chain is what the upstream stores. What it cannot prove it refuses: a NEW the
// upstream already has (rewinding a branch, or moving it to a commit pushed before), a chain
// that leaves the pack before it reaches OLD (the branch moved onto commits already upstream,
// as a fast-forward onto main without a merge commit does), a commit the pack holds only as a
// delta against an object outside it. The upstream itself refuses the update unless the ref
// still holds OLD when it applies it (the precondition --force-with-lease relies on), so a
// proven chain means the ref only moves forward.

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
)

// Pack object types.
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objTag      = 4
	objOfsDelta = 6
	objRefDelta = 7
)

// maxCommitBytes bounds a commit the broker keeps (a larger one is not followed).
const maxCommitBytes = 1 << 20

// maxPackObjects bounds the object count a pack may declare.
const maxPackObjects = 1 << 24

// packReader counts and hashes every byte the pack parser consumes; it is the io.ByteReader
// flate needs so that it never reads past a zlib stream. Bytes read one at a time are hashed in
// batches.
type packReader struct {
	r       *bufio.Reader
	h       hash.Hash
	n       int64
	pending []byte
}

func (p *packReader) ReadByte() (byte, error) {
	c, err := p.r.ReadByte()
	if err == nil {
		if p.pending = append(p.pending, c); len(p.pending) >= 8192 {
			p.flush()
		}
		p.n++
	}
	return c, err
}

func (p *packReader) Read(b []byte) (int, error) {
	p.flush()
	n, err := p.r.Read(b)
	p.h.Write(b[:n])
	p.n += int64(n)
	return n, err
}

// sum returns the hash of every byte consumed.
func (p *packReader) sum() []byte {
	p.flush()
	return p.h.Sum(nil)
}

func (p *packReader) flush() {
	p.h.Write(p.pending)
	p.pending = p.pending[:0]
}

// packObject is what the scan keeps of one object.
type packObject struct {
	typ  int
	data []byte // commits only
}

// packCommits are the commits of a pack: object name → parent names.
type packCommits map[string][]string

// scanPack reads a whole pack from r; hashLen is 40 (SHA-1) or 64 (SHA-256) hex digits.
// Bytes after the checksum are an error.
func scanPack(r *bufio.Reader, hashLen int) (packCommits, error) {
	newHash := sha1.New
	if hashLen == 64 {
		newHash = sha256.New
	}
	pr := &packReader{r: r, h: newHash(), pending: make([]byte, 0, 8192)}
	var hdr [12]byte
	if _, err := io.ReadFull(pr, hdr[:]); err != nil {
		return nil, errors.New("pack: shorter than its header")
	}
	version, count := binary.BigEndian.Uint32(hdr[4:8]), binary.BigEndian.Uint32(hdr[8:12])
	if string(hdr[:4]) != "PACK" || (version != 2 && version != 3) || count > maxPackObjects {
		return nil, errors.New("pack: not a version 2 or 3 pack of a sane object count")
	}
	byOffset := map[int64]*packObject{}
	byName := map[string]*packObject{}
	commits := packCommits{}
	for i := uint32(0); i < count; i++ {
		off := pr.n
		o, err := readPackObject(pr, off, hashLen, byOffset, byName, newHash)
		if err != nil {
			return nil, fmt.Errorf("pack: object %d at offset %d: %w", i+1, off, err)
		}
		byOffset[off] = o
		if o.typ == objCommit && o.data != nil {
			name := objectName(newHash, "commit", o.data)
			byName[name] = o
			commits[name] = commitParents(o.data, hashLen)
		}
	}
	sum := pr.sum()
	trailer := make([]byte, len(sum))
	if _, err := io.ReadFull(r, trailer); err != nil || !bytes.Equal(sum, trailer) {
		return nil, errors.New("pack: checksum missing or wrong")
	}
	if _, err := r.ReadByte(); err != io.EOF {
		return nil, errors.New("pack: bytes after the checksum")
	}
	return commits, nil
}

// readPackObject reads one object. Only commits keep their content; a delta whose base is not a
// commit of this pack takes its base's type (or 0, unknown, for a base outside the pack).
func readPackObject(pr *packReader, off int64, hashLen int, byOffset map[int64]*packObject, byName map[string]*packObject, newHash func() hash.Hash) (*packObject, error) {
	c, err := pr.ReadByte()
	if err != nil {
		return nil, errors.New("truncated header")
	}
	typ, size, shift := int(c>>4)&7, uint64(c&15), 4
	for c&0x80 != 0 {
		if c, err = pr.ReadByte(); err != nil || shift > 60 {
			return nil, errors.New("truncated or oversized size")
		}
		size |= uint64(c&0x7f) << shift
		shift += 7
	}
	var base *packObject
	switch typ {
	case objCommit, objTree, objBlob, objTag:
	case objOfsDelta:
		rel, err := readOfsDelta(pr)
		if err != nil || rel <= 0 || rel > off {
			return nil, errors.New("bad offset delta base")
		}
		if base = byOffset[off-rel]; base == nil {
			return nil, errors.New("offset delta base is not an object start")
		}
	case objRefDelta:
		raw := make([]byte, hashLen/2)
		if _, err := io.ReadFull(pr, raw); err != nil {
			return nil, errors.New("truncated delta base name")
		}
		base = byName[hex.EncodeToString(raw)] // nil: a base outside the pack (a thin pack)
	default:
		return nil, fmt.Errorf("unknown object type %d", typ)
	}
	keep := typ == objCommit || (base != nil && base.typ == objCommit)
	data, err := inflate(pr, size, keep)
	if err != nil {
		return nil, err
	}
	switch {
	case typ < objOfsDelta:
		return &packObject{typ: typ, data: data}, nil
	case base == nil:
		return &packObject{}, nil
	case base.typ != objCommit || base.data == nil:
		return &packObject{typ: base.typ}, nil
	}
	out, err := applyDelta(base.data, data)
	if err != nil {
		return nil, err
	}
	return &packObject{typ: objCommit, data: out}, nil
}

// readOfsDelta reads an offset delta's negative offset (git's offset encoding).
func readOfsDelta(pr *packReader) (int64, error) {
	c, err := pr.ReadByte()
	if err != nil {
		return 0, err
	}
	ofs := int64(c & 0x7f)
	for c&0x80 != 0 {
		if c, err = pr.ReadByte(); err != nil || ofs > 1<<48 {
			return 0, errors.New("bad offset")
		}
		ofs = ((ofs + 1) << 7) | int64(c&0x7f)
	}
	return ofs, nil
}

// inflate reads one zlib stream that must inflate to exactly size bytes, returning them when
// keep is set (and size is at most maxCommitBytes; larger is kept as nil).
func inflate(pr *packReader, size uint64, keep bool) ([]byte, error) {
	zr, err := zlib.NewReader(pr)
	if err != nil {
		return nil, errors.New("bad zlib header")
	}
	var buf bytes.Buffer
	var dst io.Writer = io.Discard
	if keep && size <= maxCommitBytes {
		dst = &buf
	}
	n, err := io.Copy(dst, io.LimitReader(zr, int64(min(size, 1<<62))+1))
	if err != nil {
		return nil, fmt.Errorf("bad zlib stream: %v", err)
	}
	if uint64(n) != size {
		return nil, fmt.Errorf("inflates to %d bytes, header says %d", n, size)
	}
	// Read to the end of the stream, so that its checksum is consumed and checked.
	if k, err := zr.Read(make([]byte, 1)); k != 0 || err != io.EOF {
		return nil, errors.New("zlib stream longer than its object")
	}
	if dst == io.Discard {
		return nil, nil
	}
	return buf.Bytes(), nil
}

// applyDelta applies a git delta to base.
func applyDelta(base, delta []byte) ([]byte, error) {
	varint := func() (uint64, bool) {
		var v uint64
		for shift := 0; shift < 64; shift += 7 {
			if len(delta) == 0 {
				return 0, false
			}
			c := delta[0]
			delta = delta[1:]
			v |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	srcSize, ok1 := varint()
	dstSize, ok2 := varint()
	if !ok1 || !ok2 || srcSize != uint64(len(base)) || dstSize > maxCommitBytes {
		return nil, errors.New("delta sizes do not match its base")
	}
	out := make([]byte, 0, dstSize)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			var vals [7]uint64
			for i := range vals {
				if op&(1<<i) != 0 {
					if len(delta) == 0 {
						return nil, errors.New("truncated delta copy")
					}
					vals[i], delta = uint64(delta[0]), delta[1:]
				}
			}
			ofs := vals[0] | vals[1]<<8 | vals[2]<<16 | vals[3]<<24
			n := vals[4] | vals[5]<<8 | vals[6]<<16
			if n == 0 {
				n = 0x10000
			}
			if ofs+n > uint64(len(base)) || uint64(len(out))+n > dstSize {
				return nil, errors.New("delta copy out of range")
			}
			out = append(out, base[ofs:ofs+n]...)
		case op != 0:
			if int(op) > len(delta) || uint64(len(out))+uint64(op) > dstSize {
				return nil, errors.New("delta insert out of range")
			}
			out, delta = append(out, delta[:op]...), delta[op:]
		default:
			return nil, errors.New("delta opcode 0")
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, errors.New("delta result shorter than declared")
	}
	return out, nil
}

// objectName is git's name of an object of type typ with content data.
func objectName(newHash func() hash.Hash, typ string, data []byte) string {
	h := newHash()
	fmt.Fprintf(h, "%s %d\x00", typ, len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// commitParents returns the "parent" lines that follow a commit's "tree" line, as git reads
// them; a commit that does not start with a tree line has none (and cannot prove anything).
func commitParents(data []byte, hashLen int) []string {
	lines := strings.Split(string(data), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "tree ") {
		return nil
	}
	var parents []string
	for _, l := range lines[1:] {
		p, ok := strings.CutPrefix(l, "parent ")
		if !ok || len(p) != hashLen || !validOID(p) {
			break
		}
		parents = append(parents, p)
	}
	return parents
}

// fastForward reports whether the commits of the pack prove that old is an ancestor of new.
func (pc packCommits) fastForward(old, new string) bool {
	if old == new {
		return true
	}
	if _, ok := pc[new]; !ok {
		return false
	}
	seen := map[string]bool{new: true}
	queue := []string{new}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, p := range pc[c] {
			if p == old {
				return true
			}
			if _, ok := pc[p]; ok && !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false
}
