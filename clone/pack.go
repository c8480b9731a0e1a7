package clone

// Pack rules: a pack is received into a temporary file, never straight into a repository, so
// that every cap is enforced before go-git resolves a single delta:
//   - bytes: the stream is cut at Limits.MaxPackBytes (plus the 12-byte header) while it arrives;
//   - objects: the count in the 12-byte header is checked before anything else is read;
//   - object size: every entry's declared size, and a delta's declared result size (a small delta
//     can expand to terabytes by repeating copies), is checked against MaxObjectBytes;
//   - delta depth: each entry's chain length is computed from its base's and checked against
//     MaxDeltaDepth; a ref-delta whose base is itself a delta is refused (git's packs use
//     offset deltas when asked, as clone mode asks).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

const packHeaderLen = 12

// capReader fails once more than max bytes have been read or the context ends.
type capReader struct {
	ctx context.Context
	r   io.Reader
	n   int64
	max int64
	// shown is the limit named in the error (max may include framing); 0 means max.
	shown int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.n > c.max {
		return 0, c.exceeded()
	}
	if rem := c.max - c.n + 1; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, c.exceeded()
	}
	return n, err
}

func (c *capReader) exceeded() error {
	shown := c.shown
	if shown == 0 {
		shown = c.max
	}
	return limitError("more than %d bytes of pack data", shown)
}

// receivePack copies a pack stream into f, enforcing the byte and object count caps as the data
// arrives. It returns the number of bytes written and the object count from the header.
func receivePack(ctx context.Context, r io.Reader, f *os.File, l Limits) (int64, int64, error) {
	cr := &capReader{ctx: ctx, r: r, max: l.MaxPackBytes + packHeaderLen, shown: l.MaxPackBytes}
	var hdr [packHeaderLen]byte
	if _, err := io.ReadFull(cr, hdr[:]); err != nil {
		return 0, 0, fmt.Errorf("read pack header: %w", err)
	}
	count, err := parsePackHeader(hdr[:])
	if err != nil {
		return 0, 0, err
	}
	if count > l.MaxObjects {
		return 0, 0, limitError("pack holds %d objects, more than %d", count, l.MaxObjects)
	}
	if _, err := f.Write(hdr[:]); err != nil {
		return 0, 0, fmt.Errorf("write pack: %w", err)
	}
	n, err := io.Copy(f, cr)
	if err != nil {
		return 0, 0, fmt.Errorf("receive pack: %w", err)
	}
	return n + packHeaderLen, count, nil
}

func parsePackHeader(h []byte) (int64, error) {
	if !bytes.Equal(h[:4], []byte("PACK")) {
		return 0, fmt.Errorf("receive pack: stream does not start with a pack header (%q)", h[:4])
	}
	if v := binary.BigEndian.Uint32(h[4:8]); v != 2 && v != 3 {
		return 0, fmt.Errorf("receive pack: unsupported pack version %d", v)
	}
	return int64(binary.BigEndian.Uint32(h[8:12])), nil
}

// scanPack reads every entry header of the pack in f and enforces the size and depth caps.
func scanPack(ctx context.Context, f *os.File, l Limits) error {
	return scanPackFile(ctx, f, l, false)
}

// packScan is the state of one scan: the delta depth of every entry seen, by offset and (whole
// objects) by hash, and the ref-delta bases still to be found later in the pack.
type packScan struct {
	l       Limits
	depthAt map[int64]int32
	depthOf map[plumbing.Hash]int32
	// later holds bases of ref deltas that may come later in the pack (nil: not allowed).
	later map[plumbing.Hash]bool
}

// scanPackFile is scanPack; forwardRefs also accepts a ref delta whose base is a whole object
// later in the same pack, as "git index-pack --fix-thin" leaves on disk (a local source's packs).
func scanPackFile(ctx context.Context, f *os.File, l Limits, forwardRefs bool) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	sc := packfile.NewScanner(bufio.NewReaderSize(f, 1<<16))
	_, count, err := sc.Header()
	if err != nil {
		return fmt.Errorf("scan pack: %w", err)
	}
	ps := &packScan{l: l, depthAt: make(map[int64]int32, count), depthOf: make(map[plumbing.Hash]int32)}
	if forwardRefs {
		ps.later = map[plumbing.Hash]bool{}
	}
	for i := uint32(0); i < count; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		h, err := sc.NextObjectHeader()
		if err != nil {
			return fmt.Errorf("scan pack entry %d: %w", i, err)
		}
		if h.Length > l.MaxObjectBytes {
			return limitError("pack entry %d is %d bytes inflated, more than %d", i, h.Length, l.MaxObjectBytes)
		}
		d, err := ps.entry(sc, h)
		if err != nil {
			return fmt.Errorf("pack entry %d: %w", i, err)
		}
		ps.depthAt[h.Offset] = d
	}
	for base := range ps.later {
		if _, ok := ps.depthOf[base]; !ok {
			return fmt.Errorf("scan pack: a ref delta's base %s is not a whole object in the pack", base)
		}
	}
	return nil
}

// entry consumes one entry and returns its delta depth (0 for a whole object).
func (ps *packScan) entry(sc *packfile.Scanner, h *packfile.ObjectHeader) (int32, error) {
	var base int32
	switch h.Type {
	case plumbing.OFSDeltaObject:
		d, ok := ps.depthAt[h.OffsetReference]
		if !ok {
			return 0, errors.New("offset delta against an entry that is not earlier in the pack")
		}
		base = d
	case plumbing.REFDeltaObject:
		d, ok := ps.depthOf[h.Reference]
		switch {
		case ok:
		case ps.later != nil:
			ps.later[h.Reference] = true // a whole object (depth 0), checked at the end
		default:
			return 0, errors.New("ref delta against an object that is not a whole object earlier in the pack (not accepted)")
		}
		base = d
	default:
		hasher := plumbing.NewHasher(h.Type, h.Length)
		if _, _, err := sc.NextObject(hasher); err != nil {
			return 0, err
		}
		ps.depthOf[hasher.Sum()] = 0
		return 0, nil
	}
	if int(base)+1 > ps.l.MaxDeltaDepth {
		return 0, limitError("delta chain longer than %d", ps.l.MaxDeltaDepth)
	}
	return base + 1, checkDeltaTarget(sc, ps.l)
}

// checkDeltaTarget reads a delta's header (base size, result size) and refuses a result above
// MaxObjectBytes, then consumes the rest of the entry.
func checkDeltaTarget(sc *packfile.Scanner, l Limits) error {
	rc, err := sc.ReadObject()
	if err != nil {
		return err
	}
	defer rc.Close()
	br := bufio.NewReader(rc)
	if _, err := binary.ReadUvarint(br); err != nil {
		return fmt.Errorf("read delta header: %w", err)
	}
	target, err := binary.ReadUvarint(br)
	if err != nil {
		return fmt.Errorf("read delta header: %w", err)
	}
	if target > uint64(l.MaxObjectBytes) {
		return limitError("a delta expands to %d bytes, more than %d", target, l.MaxObjectBytes)
	}
	_, err = io.Copy(io.Discard, br)
	return err
}

// storePack writes the scanned pack in f into s (an index is built by go-git).
func storePack(s storer.Storer, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := packfile.UpdateObjectStorage(s, bufio.NewReaderSize(f, 1<<16)); err != nil {
		return fmt.Errorf("store pack: %w", err)
	}
	return nil
}
