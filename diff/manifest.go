package diff

// The manifest is the trusted record of a session base. It lives on the host under
// $CORRAL_HOME/sessions/<box>/ (store.go), out of the box's reach, and lists every walked path
// with its lstat fields and blob hash. Compare trusts it, not the repository: the box can
// rewrite the repository's objects, but not the manifest. Its lstat fields are also the
// stat cache: a file whose size, mtime, ctime, inode and mode all match, and whose ctime is
// older than the manifest, has the recorded hash (the guest can forge mtime but not the host's
// ctime).

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

const manifestMagic = "corral-session-base 1\n"

// manifestHeader is the JSON line after the magic.
// Manifests of older versions also name the ref and commit they wrote into the repository;
// those fields are ignored.
type manifestHeader struct {
	Box      string    `json:"box"`
	TopLevel string    `json:"topLevel"`
	Created  time.Time `json:"created"`
}

// manifest is a decoded session base.
type manifest struct {
	manifestHeader
	Entries []*entry // sorted by Path
}

// encode serialises m: magic, header JSON line, entries, then a sha256 of everything before.
func (m *manifest) encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(manifestMagic)
	hj, err := json.Marshal(m.manifestHeader)
	if err != nil {
		return nil, err
	}
	b.Write(hj)
	b.WriteByte('\n')
	var tmp [binary.MaxVarintLen64]byte
	uv := func(v uint64) { b.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	sv := func(v int64) { b.Write(tmp[:binary.PutVarint(tmp[:], v)]) }
	uv(uint64(len(m.Entries)))
	for _, e := range m.Entries {
		uv(uint64(len(e.Path)))
		b.WriteString(e.Path)
		b.WriteByte(byte(e.Kind))
		b.WriteByte(e.Flags)
		uv(uint64(e.Mode))
		sv(e.Size)
		sv(e.Mtime)
		sv(e.Ctime)
		uv(e.Ino)
		uv(e.Dev)
		if e.Have {
			b.WriteByte(1)
			b.Write(e.Hash[:])
		} else {
			b.WriteByte(0)
		}
		uv(uint64(len(e.Data)))
		b.Write(e.Data)
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes(), nil
}

var errManifest = errors.New("corrupt session base manifest")

// decodeManifest parses what encode wrote, checking the trailing checksum first. Entries share
// one backing array and their paths one string, because a 100,000-file tree is decoded on every
// diff.
func decodeManifest(data []byte) (*manifest, error) {
	if len(data) < len(manifestMagic)+32 || !bytes.HasPrefix(data, []byte(manifestMagic)) {
		return nil, errManifest
	}
	body, sum := data[:len(data)-32], data[len(data)-32:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum mismatch", errManifest)
	}
	body = body[len(manifestMagic):]
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		return nil, errManifest
	}
	m := &manifest{}
	if err := json.Unmarshal(body[:nl], &m.manifestHeader); err != nil {
		return nil, fmt.Errorf("%w: header: %v", errManifest, err)
	}
	d := &decoder{buf: body[nl+1:]}
	d.str = string(d.buf)
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.buf)) {
		return nil, errManifest
	}
	backing := make([]entry, n)
	m.Entries = make([]*entry, n)
	for i := range backing {
		d.entry(&backing[i])
		if d.err != nil {
			return nil, fmt.Errorf("%w: entry %d", errManifest, i)
		}
		m.Entries[i] = &backing[i]
	}
	return m, nil
}

// decoder reads a manifest body; the first error sticks.
type decoder struct {
	buf []byte
	str string // buf as a string, for path substrings
	off int
	err error
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.buf[min(d.off, len(d.buf)):])
	if n <= 0 {
		d.err = errManifest
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.buf[min(d.off, len(d.buf)):])
	if n <= 0 {
		d.err = errManifest
		return 0
	}
	d.off += n
	return v
}

// bytes returns the next n bytes as offsets into buf.
func (d *decoder) span(n uint64) (int, int) {
	if d.err != nil || n > uint64(len(d.buf)-d.off) {
		d.err = errManifest
		return 0, 0
	}
	start := d.off
	d.off += int(n)
	return start, d.off
}

func (d *decoder) byte() byte {
	a, b := d.span(1)
	if a == b {
		return 0
	}
	return d.buf[a]
}

func (d *decoder) entry(e *entry) {
	a, b := d.span(d.uvarint())
	e.Path = d.str[a:b]
	e.Kind, e.Flags = Kind(d.byte()), d.byte()
	e.Mode = uint32(d.uvarint())
	e.Size, e.Mtime, e.Ctime = d.varint(), d.varint(), d.varint()
	e.Ino, e.Dev = d.uvarint(), d.uvarint()
	if d.byte() == 1 {
		a, b := d.span(20)
		copy(e.Hash[:], d.buf[a:b])
		e.Have = d.err == nil
	}
	if a, b := d.span(d.uvarint()); b > a {
		e.Data = d.buf[a:b:b]
	}
}

// saveManifest writes m atomically as <stamp>.base in the store and returns its path.
func saveManifest(st store, m *manifest) (string, error) {
	data, err := m.encode()
	if err != nil {
		return "", err
	}
	p := manifestPath(st, m)
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return "", fmt.Errorf("write session base %q: %w", p, err)
	}
	return p, nil
}

// manifestPath is where saveManifest writes m.
func manifestPath(st store, m *manifest) string {
	return filepath.Join(st.dir, stamp(m.Created)+".base")
}

// stamp is the sortable timestamp that names a base's files.
func stamp(t time.Time) string { return t.UTC().Format("20060102T150405.000000000Z") }

// latestManifest loads the newest manifest in the store and returns it with its path, or
// returns (nil, "", nil) when there is none.
func latestManifest(st store) (*manifest, string, error) {
	dir := st.dir
	names, err := readNames(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("list session bases %q: %w", dir, err)
	}
	var bases []string
	for _, n := range names {
		if strings.HasSuffix(n, ".base") {
			bases = append(bases, n)
		}
	}
	if len(bases) == 0 {
		return nil, "", nil
	}
	sort.Strings(bases)
	p := filepath.Join(dir, bases[len(bases)-1])
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fmt.Errorf("read session base %q: %w", p, err)
	}
	m, err := decodeManifest(data)
	if err != nil {
		return nil, "", fmt.Errorf("read session base %q: %w", p, err)
	}
	return m, p, nil
}
