package clone

// Local storage rules: go-git expands what it reads of a repository on disk without a bound (a
// loose object is inflated whole into memory, whatever its header declares; a pack entry's delta
// is read whole to learn its size), so a local source is checked before go-git reads any of it,
// with the caps a fetched pack is held to:
//   - refs: counted (countLocalRefs) before any is listed;
//   - every loose object, reachable or not: its header is read through a bounded inflater (at
//     most maxLooseHeader bytes) and a declared size over MaxObjectBytes is refused before the
//     body is inflated; the body is then inflated into nothing, and refused as soon as it runs
//     past its declared size;
//   - every pack: at most MaxPackBytes on disk and MaxObjects in its header, its index listing
//     the same number of objects in a file of the size that number takes, and the same entry
//     scan as a received pack (declared sizes, delta results, delta depth), which also proves
//     every entry inflates to no more than it declares;
//   - loose and packed objects together at most MaxObjects.
// The checks read the files go-git reads next; a source that another process rewrites in
// between is not covered (clone a repository nobody else is writing to).

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxLooseHeader bounds a loose object's header: "commit", a space, 19 digits and a NUL fit.
const maxLooseHeader = 32

// checkLocalStorage runs the local storage rules on the common git dir of a local source.
func checkLocalStorage(ctx context.Context, common string, l Limits) error {
	if err := countLocalRefs(common, l); err != nil {
		return err
	}
	objects := filepath.Join(common, "objects")
	loose, err := checkLooseObjects(ctx, objects, l)
	if err != nil {
		return err
	}
	packed, err := checkLocalPacks(ctx, filepath.Join(objects, "pack"), l)
	if err != nil {
		return err
	}
	if loose+packed > l.MaxObjects {
		return limitError("the source holds %d objects, more than %d", loose+packed, l.MaxObjects)
	}
	return nil
}

// checkLooseObjects checks every objects/xx/<38 hex> file and returns how many there are.
func checkLooseObjects(ctx context.Context, objects string, l Limits) (int64, error) {
	dirs, err := os.ReadDir(objects)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", objects, err)
	}
	var n int64
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 || !isHex(d.Name()) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(objects, d.Name()))
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", filepath.Join(objects, d.Name()), err)
		}
		for _, f := range files {
			if len(f.Name()) != 38 || !isHex(f.Name()) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if n++; n > l.MaxObjects {
				return 0, limitError("the source holds more than %d loose objects", l.MaxObjects)
			}
			if err := checkLooseObject(filepath.Join(objects, d.Name(), f.Name()), d.Name()+f.Name(), l); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}

// checkLooseObject reads the header of the loose object at p with a bounded inflater, refuses a
// declared size over the cap before inflating the body, and refuses a body longer than declared.
func checkLooseObject(p, id string, l Limits) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return fmt.Errorf("loose object %s: not zlib data: %w", id, err)
	}
	defer zr.Close()
	size, err := looseHeader(zr)
	if err != nil {
		return fmt.Errorf("loose object %s: %w", id, err)
	}
	if size > l.MaxObjectBytes {
		return limitError("loose object %s declares %d bytes, more than %d", id, size, l.MaxObjectBytes)
	}
	n, err := io.CopyN(io.Discard, zr, size+1)
	switch {
	case n > size:
		return limitError("loose object %s inflates past the %d bytes its header declares", id, size)
	case errors.Is(err, io.EOF) && n == size:
		return nil
	case err == nil || errors.Is(err, io.EOF):
		return fmt.Errorf("loose object %s: %d bytes where its header declares %d", id, n, size)
	}
	return fmt.Errorf("loose object %s: %w", id, err)
}

// looseHeader reads "<type> <size>\x00" from at most maxLooseHeader inflated bytes.
func looseHeader(zr io.Reader) (int64, error) {
	var hdr []byte
	var b [1]byte
	for len(hdr) < maxLooseHeader {
		if _, err := io.ReadFull(zr, b[:]); err != nil {
			return 0, fmt.Errorf("read header: %w", err)
		}
		if b[0] == 0 {
			typ, num, ok := strings.Cut(string(hdr), " ")
			size, err := strconv.ParseInt(num, 10, 64)
			if !ok || err != nil || size < 0 || (typ != "blob" && typ != "tree" && typ != "commit" && typ != "tag") {
				return 0, fmt.Errorf("malformed header %q", hdr)
			}
			return size, nil
		}
		hdr = append(hdr, b[0])
	}
	return 0, fmt.Errorf("header longer than %d bytes", maxLooseHeader)
}

// checkLocalPacks checks every *.pack in dir and returns how many objects they hold.
func checkLocalPacks(ctx context.Context, dir string, l Limits) (int64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", dir, err)
	}
	var total int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".pack") {
			continue
		}
		n, err := checkLocalPack(ctx, filepath.Join(dir, e.Name()), l)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// checkLocalPack runs the pack rules on one pack of a local source and returns its object count.
func checkLocalPack(ctx context.Context, p string, l Limits) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() > l.MaxPackBytes+packHeaderLen+20 {
		return 0, limitError("pack %s is %d bytes, more than %d", filepath.Base(p), fi.Size(), l.MaxPackBytes)
	}
	var hdr [packHeaderLen]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return 0, fmt.Errorf("read pack %s: %w", p, err)
	}
	count, err := parsePackHeader(hdr[:])
	if err != nil {
		return 0, fmt.Errorf("pack %s: %w", p, err)
	}
	if count > l.MaxObjects {
		return 0, limitError("pack %s holds %d objects, more than %d", filepath.Base(p), count, l.MaxObjects)
	}
	if err := checkPackIndex(strings.TrimSuffix(p, ".pack")+".idx", count); err != nil {
		return 0, err
	}
	if err := scanPackFile(ctx, f, l, true); err != nil {
		return 0, fmt.Errorf("pack %s: %w", filepath.Base(p), err)
	}
	return count, nil
}

// checkPackIndex checks that a version 2 pack index lists count objects and is the size that
// takes, before go-git allocates its tables from the counts it declares.
func checkPackIndex(p string, count int64) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("pack index: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var hdr [8 + 256*4]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return fmt.Errorf("pack index %s: %w", p, err)
	}
	if !bytes.Equal(hdr[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return fmt.Errorf("pack index %s: not a version 2 index", p)
	}
	n := int64(binary.BigEndian.Uint32(hdr[8+255*4:]))
	least := int64(len(hdr)) + n*28 + 40
	if n != count || fi.Size() < least || fi.Size() > least+n*8 {
		return fmt.Errorf("pack index %s lists %d objects in %d bytes; its pack holds %d", p, n, fi.Size(), count)
	}
	return nil
}
