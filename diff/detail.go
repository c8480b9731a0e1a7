package diff

// Details show what changed in a host-executed file: a structured diff where the format allows
// (only the changed scripts and keys of package.json, the changed hooks of a pre-commit config),
// the line diff otherwise, and a one-line summary for binary, large or unreadable content. The
// old bytes come from the trusted manifest (git metadata), the session-base store under
// $CORRAL_HOME or git's object store, always verified against the recorded hash, so that a box
// rewriting a loose object cannot change what is shown.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/git-corral/git-corral/internal/visible"
)

// maxDetailLines bounds one finding's detail; the rest is counted.
const maxDetailLines = 400

// content is one side of a change.
type content struct {
	data    []byte
	missing string // why data is absent ("" when present)
}

func (c *classifier) detail(ch *Change) []string {
	if ch.Status == "unreadable" || ch.Status == "deleted" {
		return nil
	}
	if ch.cur.Kind != KindFile {
		return nil
	}
	newC := c.newContent(ch.cur)
	var oldC content
	if ch.old != nil {
		oldC = c.oldContent(ch.old)
	}
	if newC.missing != "" {
		return []string{newC.missing}
	}
	if ch.old != nil && oldC.missing != "" {
		return []string{"old content " + oldC.missing, fmt.Sprintf("new: %d bytes", len(newC.data))}
	}
	if isBinary(newC.data) || isBinary(oldC.data) {
		return []string{fmt.Sprintf("binary: %d → %d bytes (%s → %s)", len(oldC.data), len(newC.data), orNone(ch.OldHash), ch.NewHash)}
	}
	var lines []string
	switch base := strings.ToLower(path.Base(ch.Path)); {
	case base == "package.json":
		lines = packageJSONDiff(oldC.data, newC.data, ch.old == nil)
	case base == ".pre-commit-config.yaml" || base == ".pre-commit-config.yml":
		lines = preCommitDiff(oldC.data, newC.data)
	}
	if lines == nil {
		lines = lineDiff(string(oldC.data), string(newC.data))
	}
	if len(lines) > maxDetailLines {
		lines = append(lines[:maxDetailLines], fmt.Sprintf("… %d more lines (see --json)", len(lines)-maxDetailLines))
	}
	return lines
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s[:12]
}

// newContent reads the current bytes of e, up to MaxText.
func (c *classifier) newContent(e *entry) content {
	if e.Size > c.o.MaxText {
		return content{missing: fmt.Sprintf("%d bytes, larger than %d: not shown (hash %s)", e.Size, c.o.MaxText, plumbing.Hash(e.Hash))}
	}
	data, err := readVerified(c.absOf(e), e, c.o.MaxText+1)
	if err != nil {
		return content{missing: "could not be read: " + err.Error()}
	}
	return content{data: data}
}

// oldContent returns the base bytes of e, verified against its recorded hash: inline in the
// manifest (git metadata), in the session-base store (what the repository lacked), or in the
// repository's object store (what git already held, and the bases of older versions).
func (c *classifier) oldContent(e *entry) content {
	if e.Data != nil {
		return content{data: e.Data}
	}
	if !e.Have {
		return content{missing: "unknown"}
	}
	if e.Size > c.o.MaxText {
		return content{missing: fmt.Sprintf("was %d bytes: not shown", e.Size)}
	}
	data, err := c.store.blob(e.Hash, c.o.MaxText)
	if err == nil {
		return content{data: data}
	}
	if !errors.Is(err, errNotStored) {
		return content{missing: "in the session base store " + err.Error()}
	}
	return c.repoContent(e)
}

// repoContent reads the base bytes of e from the repository's object store.
func (c *classifier) repoContent(e *entry) content {
	blob, err := c.repo.BlobObject(plumbing.Hash(e.Hash))
	if err != nil {
		return content{missing: "not recorded (larger files and ignored directories are recorded by hash only)"}
	}
	if blob.Size > c.o.MaxText {
		return content{missing: fmt.Sprintf("was %d bytes: not shown", blob.Size)}
	}
	r, err := blob.Reader()
	if err != nil {
		return content{missing: "unreadable: " + err.Error()}
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, c.o.MaxText+1))
	if err != nil {
		return content{missing: "unreadable: " + err.Error()}
	}
	if blobHash(data) != e.Hash {
		return content{missing: "failed verification: the repository's object was altered"}
	}
	return content{data: data}
}

// isBinary is git's heuristic (a NUL in the first 8000 bytes) plus invalid UTF-8.
func isBinary(b []byte) bool {
	head := b
	if len(head) > 8000 {
		head = head[:8000]
	}
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(b)
}

// lineDiff is a line diff with three lines of context, "-"/"+"/" " prefixes and "@@ line N"
// markers where context was skipped. It runs no external program.
func lineDiff(old, cur string) []string {
	var out []string
	diffs := diff.Do(old, cur)
	oldLine := 1
	for i, d := range diffs {
		lines := splitLines(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			out = appendPrefixed(out, "-", lines)
			oldLine += len(lines)
		case diffmatchpatch.DiffInsert:
			out = appendPrefixed(out, "+", lines)
		default:
			out = appendContext(out, lines, oldLine, i == 0, i == len(diffs)-1)
			oldLine += len(lines)
		}
	}
	return out
}

func appendPrefixed(out []string, p string, lines []string) []string {
	for _, l := range lines {
		out = append(out, p+l)
	}
	return out
}

// appendContext keeps up to three lines after the previous change and before the next one.
func appendContext(out, lines []string, start int, first, last bool) []string {
	const ctx = 3
	if len(lines) <= 2*ctx && !first && !last {
		return appendPrefixed(out, " ", lines)
	}
	if !first {
		out = appendPrefixed(out, " ", lines[:min(ctx, len(lines))])
	}
	if !last {
		from := max(len(lines)-ctx, 0)
		if first || from > ctx {
			out = append(out, fmt.Sprintf("@@ line %d", start+from))
		}
		out = appendPrefixed(out, " ", lines[from:])
	}
	return out
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{""}
	}
	return strings.Split(s, "\n")
}

// hiddenLines lists the lines of a changed text file that hold characters visible.Hidden
// flags (other than tab and a CR ending a line), each with its line number, shown escaped.
func (c *classifier) hiddenLines(ch *Change) []string {
	if ch.cur == nil || ch.cur.Kind != KindFile {
		return nil
	}
	nc := c.newContent(ch.cur)
	if nc.missing != "" || isBinary(nc.data) && !utf8.Valid(nc.data) && bytes.IndexByte(nc.data, 0) >= 0 {
		return nil
	}
	var out []string
	for i, line := range strings.Split(string(nc.data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if visible.Has(strings.ReplaceAll(line, "\t", " ")) {
			out = append(out, fmt.Sprintf("line %d: %s", i+1, visible.String(line)))
		}
	}
	return out
}
