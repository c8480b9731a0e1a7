package exportfile

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// Scan lists the tree under root (root itself not included) for an export, never following a
// link: directories, regular files (hashed) and, when allowLinks, symbolic links. A FIFO,
// socket or device, or a link when links are not allowed, is an error naming its path. skip,
// when not nil, leaves out a path (and everything below it).
func Scan(ctx context.Context, root string, allowLinks bool, skip func(rel string) bool) ([]Entry, error) {
	var out []Entry
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("export %s: %w", root, err)
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, d := range ents {
			if err := ctx.Err(); err != nil {
				return err
			}
			p := path.Join(rel, d.Name())
			if skip != nil && skip(p) {
				continue
			}
			full := filepath.Join(root, filepath.FromSlash(p))
			fi, err := os.Lstat(full)
			if err != nil {
				return fmt.Errorf("export %s: %w", root, err)
			}
			e := Entry{Path: p, Mode: uint32(fi.Mode().Perm())}
			switch {
			case fi.IsDir():
				e.Type = TypeDir
				out = append(out, e)
				if err := walk(p); err != nil {
					return err
				}
				continue
			case fi.Mode().IsRegular():
				e.Type, e.Size, e.MTime = TypeFile, fi.Size(), fi.ModTime().UnixNano()
				if e.SHA256, err = hashFile(full, fi); err != nil {
					return fmt.Errorf("export %s: %w", root, err)
				}
			case fi.Mode()&fs.ModeSymlink != 0 && allowLinks:
				e.Type = TypeLink
				if e.Link, err = os.Readlink(full); err != nil {
					return fmt.Errorf("export %s: %w", root, err)
				}
			default:
				return fmt.Errorf("export %s: %q is a %s: only directories and regular files%s are exported: %w",
					root, p, fi.Mode().Type(), map[bool]string{true: " and links", false: ""}[allowLinks], ErrRefused)
			}
			if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
				return fmt.Errorf("export %s: %q is setuid, setgid or sticky: %w", root, p, ErrRefused)
			}
			out = append(out, e)
		}
		return nil
	}
	return out, walk("")
}

// openRegular opens the regular file p without following a link and checks it is still the
// file Lstat saw.
func openRegular(p string, fi fs.FileInfo) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	got, err := f.Stat()
	if err != nil || !got.Mode().IsRegular() || (fi != nil && !os.SameFile(got, fi)) {
		f.Close()
		return nil, fmt.Errorf("%s was replaced while it was exported: %w", p, ErrRefused)
	}
	return f, nil
}

func hashFile(p string, fi fs.FileInfo) (string, error) {
	f, err := openRegular(p, fi)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashingWriter writes through to w and hashes what it writes while on.
type hashingWriter struct {
	w  io.Writer
	h  hash.Hash
	on bool
}

func (hw *hashingWriter) Write(b []byte) (int, error) {
	n, err := hw.w.Write(b)
	if hw.on {
		hw.h.Write(b[:n])
	}
	return n, err
}

// Write writes an export file of kind with meta (marshalled to JSON) and the entries Scan
// listed under root to dst, atomically: a temporary file beside dst, synced, renamed over it.
// A file whose content no longer matches its Scan digest fails the export.
func Write(ctx context.Context, dst, kind string, meta any, root string, entries []Entry) (err error) {
	mb, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	hb, err := json.Marshal(Header{Format: Format, Kind: kind, Meta: mb, Entries: entries})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o644); err != nil { // a file made to be copied to another host
		return fmt.Errorf("write %s: %w", dst, err)
	}
	hw := &hashingWriter{w: f, h: sha256.New(), on: true}
	tw := tar.NewWriter(hw)
	epoch := time.Unix(0, 0)
	if err := writeEntry(tw, &tar.Header{Name: headerName, Mode: 0o644, Size: int64(len(hb)), ModTime: epoch, Format: tar.FormatPAX}, bytes.NewReader(hb)); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writePayload(tw, root, e); err != nil {
			return fmt.Errorf("write %s: %w", dst, err)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	hw.on = false
	body := "sha256 " + hex.EncodeToString(hw.h.Sum(nil)) + "\n"
	if err := writeEntry(tw, &tar.Header{Name: trailerName, Mode: 0o644, Size: int64(len(body)), ModTime: epoch, Format: tar.FormatUSTAR}, bytes.NewReader([]byte(body))); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
}

func writeEntry(tw *tar.Writer, h *tar.Header, r io.Reader) error {
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if r == nil {
		return nil
	}
	n, err := io.Copy(tw, r)
	if err == nil && n != h.Size {
		err = fmt.Errorf("%s: wrote %d of %d bytes", h.Name, n, h.Size)
	}
	return err
}

// writePayload writes one entry, re-hashing a file as it is copied.
func writePayload(tw *tar.Writer, root string, e Entry) error {
	h := &tar.Header{Name: payloadDir + e.Path, Mode: int64(e.Mode), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	full := filepath.Join(root, filepath.FromSlash(e.Path))
	switch e.Type {
	case TypeDir:
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		return writeEntry(tw, h, nil)
	case TypeLink:
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
		return writeEntry(tw, h, nil)
	}
	f, err := openRegular(full, nil)
	if err != nil {
		return err
	}
	defer f.Close()
	h.Typeflag, h.Size, h.ModTime = tar.TypeReg, e.Size, time.Unix(0, e.MTime)
	sum := sha256.New()
	if err := writeEntry(tw, h, io.TeeReader(io.LimitReader(f, e.Size), sum)); err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != e.SHA256 {
		return fmt.Errorf("%s changed while it was exported (sha256 %s, listed %s): export again when nothing writes it", full, got, e.SHA256)
	}
	return nil
}
