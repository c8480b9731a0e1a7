package exportfile

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"
)

// hashingReader reads through r, hashing every byte before offset limit.
type hashingReader struct {
	r     io.Reader
	h     hash.Hash
	off   int64
	limit int64
}

func (hr *hashingReader) Read(b []byte) (int, error) {
	n, err := hr.r.Read(b)
	if n > 0 && hr.off < hr.limit {
		k := int64(n)
		if hr.off+k > hr.limit {
			k = hr.limit - hr.off
		}
		hr.h.Write(b[:k])
	}
	hr.off += int64(n)
	return n, err
}

// ReadOptions say what a reader accepts.
type ReadOptions struct {
	// Kind is the only kind accepted.
	Kind string
	// AllowLinks accepts symbolic links (relative, lexically inside); the caller resolves them.
	AllowLinks bool
	// Check sees the header before any payload is read; its error refuses the file.
	Check func(Header) error
}

// Read checks the export file src and extracts its payload into stage, an existing empty
// directory, returning the header. On any error stage may hold part of the payload: the
// caller removes it.
func Read(ctx context.Context, src, stage string, opt ReadOptions) (Header, error) {
	var h Header
	f, err := os.Open(src)
	if err != nil {
		return h, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return h, err
	}
	if !fi.Mode().IsRegular() {
		return h, fmt.Errorf("%s is a %s, not an export file: %w", src, fi.Mode().Type(), ErrRefused)
	}
	size := fi.Size()
	if size < TrailerBytes+1024 {
		return h, fmt.Errorf("%s holds %d bytes, less than any export file: %w; copy it again", src, size, ErrTruncated)
	}
	hr := &hashingReader{r: f, h: sha256.New(), limit: size - TrailerBytes}
	tr := tar.NewReader(hr)
	if h, err = readHeader(tr, src, opt); err != nil {
		return h, err
	}
	if need := minSize(h.Entries); size < need {
		return h, fmt.Errorf("%s holds %d bytes, but its header lists at least %d: %w (a partial copy or download); copy it again", src, size, need, ErrTruncated)
	}
	if opt.Check != nil {
		if err := opt.Check(h); err != nil {
			return h, err
		}
	}
	root, err := os.OpenRoot(stage)
	if err != nil {
		return h, err
	}
	defer root.Close()
	for _, e := range h.Entries {
		if err := ctx.Err(); err != nil {
			return h, err
		}
		if err := readPayload(tr, root, src, e); err != nil {
			return h, err
		}
	}
	if err := readTrailer(tr, hr, src); err != nil {
		return h, err
	}
	// directories last: a recorded mode without a write bit must not stop their entries
	for i := len(h.Entries) - 1; i >= 0; i-- {
		if e := h.Entries[i]; e.Type == TypeDir {
			if err := root.Chmod(e.Path, os.FileMode(e.Mode)); err != nil {
				return h, err
			}
		}
	}
	return h, nil
}

// next returns the next tar entry, turning an early end into ErrTruncated and a broken header
// into ErrChanged.
func next(tr *tar.Reader, src, want string) (*tar.Header, error) {
	th, err := tr.Next()
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%s ends before %s: %w; copy it again", src, want, ErrTruncated)
	case err != nil:
		return nil, fmt.Errorf("%s: before %s: %v: %w; copy or export it again", src, want, err, ErrChanged)
	}
	return th, nil
}

func readHeader(tr *tar.Reader, src string, opt ReadOptions) (Header, error) {
	var h Header
	th, err := next(tr, src, "its header")
	if err != nil {
		return h, err
	}
	if th.Name != headerName || th.Typeflag != tar.TypeReg || th.Size > maxHeaderBytes {
		return h, fmt.Errorf("%s does not begin with %s (found %q): not a git corral export file: %w", src, headerName, th.Name, ErrRefused)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		return h, fmt.Errorf("%s: header: %w: %w; copy it again", src, err, ErrTruncated)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("%s: header: %v: %w", src, err, ErrChanged)
	}
	if h.Format != Format {
		return h, fmt.Errorf("%s is export format %d; this git corral reads format %d: %w; export it with a git corral of this version", src, h.Format, Format, ErrRefused)
	}
	if h.Kind != opt.Kind {
		return h, fmt.Errorf("%s is an export of %q, not of %q: %w", src, h.Kind, opt.Kind, ErrRefused)
	}
	if err := checkEntries(h.Entries, opt.AllowLinks); err != nil {
		return h, fmt.Errorf("%s: %w", src, err)
	}
	return h, nil
}

// readPayload reads the entry e, which must come next, into root.
func readPayload(tr *tar.Reader, root *os.Root, src string, e Entry) error {
	th, err := next(tr, src, "entry "+e.Path)
	if err != nil {
		return err
	}
	name := payloadDir + e.Path
	if e.Type == TypeDir {
		name += "/"
	}
	wantType := map[string]byte{TypeDir: tar.TypeDir, TypeFile: tar.TypeReg, TypeLink: tar.TypeSymlink}[e.Type]
	if th.Name != name || th.Typeflag != wantType || (e.Type == TypeFile && th.Size != e.Size) || (e.Type == TypeLink && th.Linkname != e.Link) {
		return fmt.Errorf("%s: found %q (type %q, %d bytes) where its header lists %q (%s, %d bytes): %w; export it again",
			src, th.Name, string(th.Typeflag), th.Size, name, e.Type, e.Size, ErrChanged)
	}
	switch e.Type {
	case TypeDir:
		if err := root.Mkdir(e.Path, 0o700); err != nil {
			return err
		}
		return nil
	case TypeLink:
		return root.Symlink(e.Link, e.Path)
	}
	out, err := root.OpenFile(e.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, sum), tr)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || (err == nil && n != e.Size):
		return fmt.Errorf("%s ends inside %s (%d of %d bytes): %w; copy it again", src, e.Path, n, e.Size, ErrTruncated)
	case err != nil:
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != e.SHA256 {
		return fmt.Errorf("%s: %s has sha256 %s, its header lists %s: %w; copy or export it again", src, e.Path, got, e.SHA256, ErrChanged)
	}
	if err := root.Chmod(e.Path, os.FileMode(e.Mode)); err != nil {
		return err
	}
	mt := time.Unix(0, e.MTime)
	return root.Chtimes(e.Path, mt, mt)
}

// readTrailer reads the trailer, compares the digest of every byte before it, and refuses
// anything after the end of the archive.
func readTrailer(tr *tar.Reader, hr *hashingReader, src string) error {
	th, err := next(tr, src, "its trailer")
	if err != nil {
		return err
	}
	if th.Name != trailerName || th.Size != int64(trailerBody) {
		return fmt.Errorf("%s: found %q where its trailer belongs: %w; export it again", src, th.Name, ErrChanged)
	}
	if hr.off != hr.limit+512 {
		return fmt.Errorf("%s: its trailer is not where its size puts it: %w; copy it again", src, ErrChanged)
	}
	body, err := io.ReadAll(tr)
	if err != nil || len(body) != trailerBody {
		return fmt.Errorf("%s ends inside its trailer: %w; copy it again", src, ErrTruncated)
	}
	want, ok := bytes.CutPrefix(bytes.TrimSuffix(body, []byte("\n")), []byte("sha256 "))
	if got := hex.EncodeToString(hr.h.Sum(nil)); !ok || string(want) != got {
		return fmt.Errorf("%s: its bytes have sha256 %s, its trailer says %q: %w (a byte changed after it was written); copy or export it again", src, got, want, ErrChanged)
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: something follows its trailer (%v): %w", src, err, ErrChanged)
	}
	if rest, _ := io.Copy(io.Discard, hr); rest != 0 || hr.off != hr.limit+TrailerBytes {
		return fmt.Errorf("%s: %d bytes follow the end of the archive: %w", src, rest, ErrChanged)
	}
	return nil
}
