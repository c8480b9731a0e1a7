package clone

// Ref count rules: a source may list at most Limits.MaxRefs branches and tags (refs/heads/*,
// refs/tags/*, the refs clone mode takes) and at most refListFactor × MaxRefs refs in all (other
// namespaces, such as a forge's refs/pull/*, are ignored but still cost memory to list). They are
// counted before any is kept:
//   - a local source: every loose file under refs/ and every line of packed-refs, before go-git
//     lists a single ref;
//   - https: every ref line of the advertisement, while it arrives (the response is cut at the
//     first ref over a cap);
//   - ssh: every advertised ref, once go-git has read the advertisement and before a pack is asked
//     for (go-git's SSH transport gives no hook on the stream itself, so there the advertisement
//     is read whole first);
//   - a bundle from a box (FetchBack) has its own fixed cap of maxBundleRefs header lines.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// refListFactor is how many refs in all a source may list per branch or tag it may list.
const refListFactor = 10

// refTally counts the refs a source lists against the caps; err is the first refusal.
type refTally struct {
	max, maxAll  int64
	taken, total int64
	err          error
}

func newRefTally(l Limits) *refTally {
	return &refTally{max: l.MaxRefs, maxAll: l.MaxRefs * refListFactor}
}

// add counts one listed ref and returns the refusal once a cap is exceeded.
func (t *refTally) add(name string) error {
	if t.err != nil {
		return t.err
	}
	t.total++
	if wantedRef(name) {
		t.taken++
	}
	const next = "nothing was fetched: check the URL, or clone a repository this large with git inside a box ('git corral shell'), where it costs the box and not the host"
	switch {
	case t.taken > t.max:
		t.err = limitError("the source lists more than %d branches and tags (cap: Limits.MaxRefs = %d); %s", t.max, t.max, next)
	case t.total > t.maxAll:
		t.err = limitError("the source lists more than %d refs in all (cap: %d × Limits.MaxRefs = %d; refs outside refs/heads and refs/tags are not taken but cost memory to list); %s",
			t.maxAll, refListFactor, t.maxAll, next)
	}
	return t.err
}

// countLocalRefs counts the loose refs under common/refs and the lines of common/packed-refs
// without reading any ref into go-git.
func countLocalRefs(common string, l Limits) error {
	t := newRefTally(l)
	refs := filepath.Join(common, "refs")
	err := filepath.WalkDir(refs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(common, p)
			return t.add(filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return countError(t, err, refs)
	}
	f, err := os.Open(filepath.Join(common, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return countError(t, countPackedRefs(f, t), f.Name())
}

func countError(t *refTally, err error, where string) error {
	if err == nil || err == t.err {
		return err
	}
	return fmt.Errorf("count refs in %s: %w", where, err)
}

// countPackedRefs counts the ref lines of a packed-refs file (not comments or peeled lines).
func countPackedRefs(r io.Reader, t *refTally) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		_, name, _ := bytes.Cut(line, []byte(" "))
		if err := t.add(string(name)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// countAdvertised counts refs already decoded from an advertisement (ssh, and https again).
func countAdvertised[V any](refs map[string]V, t *refTally) error {
	for name := range refs {
		if err := t.add(name); err != nil {
			return err
		}
	}
	return nil
}

// advCounter passes a smart-HTTP ref advertisement through, counting its ref lines into t as
// they arrive and failing the read at the first one over a cap.
type advCounter struct {
	r    io.Reader
	t    *refTally
	hdr  []byte // length digits of the pkt-line being read
	left int    // payload bytes of the current pkt-line not yet seen
	line []byte // the start of the current payload (enough for a hash and a ref name)
}

// maxAdvLineKept is how much of a ref line is kept to read its name (hash, space, 1024-byte name).
const maxAdvLineKept = 41 + maxRefName + 8

func (c *advCounter) Read(p []byte) (int, error) {
	if c.t.err != nil {
		return 0, c.t.err
	}
	n, err := c.r.Read(p)
	if ferr := c.feed(p[:n]); ferr != nil {
		return 0, ferr
	}
	return n, err
}

// feed advances the pkt-line parser over b.
func (c *advCounter) feed(b []byte) error {
	for len(b) > 0 {
		if c.left == 0 {
			k := min(4-len(c.hdr), len(b))
			c.hdr, b = append(c.hdr, b[:k]...), b[k:]
			if len(c.hdr) < 4 {
				return nil
			}
			size, err := strconv.ParseUint(string(c.hdr), 16, 16)
			c.hdr = c.hdr[:0]
			if err != nil {
				return nil // not a pkt-line stream: go-git's decoder says so
			}
			if size > 4 {
				c.left, c.line = int(size)-4, c.line[:0]
			}
			continue
		}
		k := min(c.left, len(b))
		if keep := min(k, maxAdvLineKept-len(c.line)); keep > 0 {
			c.line = append(c.line, b[:keep]...)
		}
		c.left, b = c.left-k, b[k:]
		if c.left == 0 {
			if err := c.endLine(); err != nil {
				return err
			}
		}
	}
	return nil
}

// endLine counts the finished pkt-line if it names a ref ("<40 hex> <name>[\0caps]\n").
func (c *advCounter) endLine() error {
	line := c.line
	if len(line) < 42 || line[40] != ' ' || bytes.HasPrefix(line, []byte("# ")) {
		return nil
	}
	name := string(line[41:])
	if i := strings.IndexAny(name, "\x00\n"); i >= 0 {
		name = name[:i]
	}
	if strings.HasSuffix(name, "^{}") || name == "capabilities^{}" {
		return nil
	}
	return c.t.add(name)
}
