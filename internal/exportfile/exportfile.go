// Package exportfile is the one-file format that carries a base image (`git corral image
// export`) or the agent store (`git corral agents export`) to a host that cannot build or fetch
// them: an air-gapped host, or a Mac.
//
// It owns the file's layout, writing it and reading it back into a staging directory. It does
// not own what the payload means: the caller checks the header's kind and metadata (an image's
// architecture and recipe, an agent store's platform) before any payload is read, checks the
// staged tree as its own store does, and moves it into place.
//
// Layout: a tar stream of
//   - corral-export.json: the Header (format, kind, the caller's metadata, and every payload
//     entry with its type, mode, size, mtime and sha256), first, so that a file for another
//     architecture or recipe is refused before gigabytes are read;
//   - payload/<path> for each entry, in the header's order;
//   - corral-export.sha256, the trailer: "sha256 <hex>\n", the digest of every byte of the file
//     before it. It is written in the USTAR format with a fixed size, so with the end-of-archive
//     blocks it is always the file's last TrailerBytes bytes, and the digest covers every other
//     byte: headers, padding and all.
//
// Rules:
//   - writing streams (nothing is held in memory) into a temporary file beside the destination,
//     synced and renamed over it: a reader never sees half a file;
//   - reading refuses, each naming the file and what to do: a byte changed anywhere (the entry's
//     own sha256 names the file it is in; the trailer catches the rest), a truncated file
//     (checked against the header's sizes before anything is extracted, and by the stream),
//     bytes after the end, an entry the header does not list or out of its order, an absolute
//     path, "..", a device, FIFO or hard link, setuid/setgid/sticky bits, and links unless the
//     caller allows them (relative, and lexically inside the tree; the caller resolves them);
//   - everything is written through an os.Root on the staging directory, files created
//     exclusively, modes and file mtimes set as recorded (umask does not apply).
package exportfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Format is the layout this package writes and reads.
const Format = 1

// Names of the control entries, and the fixed size of the trailer at the end of the file.
const (
	headerName   = "corral-export.json"
	payloadDir   = "payload/"
	trailerName  = "corral-export.sha256"
	trailerBody  = len("sha256 ") + 64 + 1
	TrailerBytes = 512 + 512 + 1024 // its header, its padded body, the end-of-archive blocks
)

// maxHeaderBytes caps the header read (an agent store of ~20,000 files is a few MB).
const maxHeaderBytes = 64 << 20

// Entry types.
const (
	TypeDir  = "dir"
	TypeFile = "file"
	TypeLink = "link"
)

// Header is the first entry of an export file.
type Header struct {
	Format int    `json:"format"`
	Kind   string `json:"kind"`
	// Meta is the caller's metadata (an image's image.json, an agent store's platform).
	Meta    json.RawMessage `json:"meta"`
	Entries []Entry         `json:"entries"`
}

// Entry is one path of the payload.
type Entry struct {
	// Path is slash-separated and relative to the payload's root, clean, without "..".
	Path string `json:"path"`
	Type string `json:"type"`
	// Mode is the permission bits (0777 at most).
	Mode  uint32 `json:"mode"`
	Size  int64  `json:"size,omitempty"`
	MTime int64  `json:"mtime,omitempty"` // files: Unix nanoseconds
	// SHA256 is a file's digest, hex.
	SHA256 string `json:"sha256,omitempty"`
	Link   string `json:"link,omitempty"`
}

// Sentinel errors; test with errors.Is.
var (
	// ErrChanged: a byte of the file differs from what was written.
	ErrChanged = errors.New("export file changed or damaged")
	// ErrTruncated: the file ends before what its header lists.
	ErrTruncated = errors.New("export file truncated")
	// ErrRefused: the file holds something the format never writes.
	ErrRefused = errors.New("export file refused")
)

// checkPath refuses a payload path that is not relative, clean and inside.
func checkPath(p string) error {
	if p == "" || p == "." || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") ||
		strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("path %q is not relative and clean: %w", p, ErrRefused)
	}
	return nil
}

// checkEntries refuses a header entry list the format never writes.
func checkEntries(es []Entry, allowLinks bool) error {
	seen := map[string]string{}
	for _, e := range es {
		if err := checkPath(e.Path); err != nil {
			return err
		}
		if _, dup := seen[e.Path]; dup {
			return fmt.Errorf("path %q is listed twice: %w", e.Path, ErrRefused)
		}
		if d := path.Dir(e.Path); d != "." && seen[d] != TypeDir {
			return fmt.Errorf("path %q is not below a directory listed before it: %w", e.Path, ErrRefused)
		}
		seen[e.Path] = e.Type
		if e.Mode&^0o777 != 0 {
			return fmt.Errorf("path %q: mode %#o has bits beyond 0777 (setuid, setgid, sticky): %w", e.Path, e.Mode, ErrRefused)
		}
		switch e.Type {
		case TypeDir:
		case TypeFile:
			if e.Size < 0 || len(e.SHA256) != 64 {
				return fmt.Errorf("path %q: size %d or sha256 %q is not usable: %w", e.Path, e.Size, e.SHA256, ErrRefused)
			}
		case TypeLink:
			if !allowLinks {
				return fmt.Errorf("path %q is a symbolic link, which this kind of export never holds: %w", e.Path, ErrRefused)
			}
			j := path.Join(path.Dir(e.Path), e.Link)
			if e.Link == "" || path.IsAbs(e.Link) || j == ".." || strings.HasPrefix(j, "../") {
				return fmt.Errorf("path %q: link to %q leaves the tree: %w", e.Path, e.Link, ErrRefused)
			}
		default:
			return fmt.Errorf("path %q: type %q is not dir, file or link: %w", e.Path, e.Type, ErrRefused)
		}
	}
	return nil
}

// minSize is the least number of bytes a file with these entries can have: each entry's
// header and padded content, plus the control entries' (the export header's own size is
// counted by the caller).
func minSize(es []Entry) int64 {
	n := int64(TrailerBytes) + 512
	for _, e := range es {
		n += 512 + (e.Size+511)/512*512
	}
	return n
}
