package report

// Integrity of a record. Rules:
//   - A section's hash is "sha256:" and the hex sha256 of the section's compact JSON: the bytes
//     encoding/json writes (HTML not escaped), which are also what json.Compact makes of the
//     indented member in the document. So Check hashes the member as it stands in the file,
//     and a change to any byte of it other than whitespace between tokens changes the hash.
//   - The digest is the sha256 of Format, a newline, then "NAME HASH\n" per section in
//     SectionNames order: it binds every hash, and so every section.
//   - Check requires exactly the known sections and exactly their hashes; a missing, extra or
//     unknown member is a failure, not something to skip.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// IntegrityError is a record whose hashes do not hold; Section names the part that failed
// ("digest" for the digest, "document" for the document's shape).
type IntegrityError struct {
	Section string
	Problem string
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("report section %q: %s", e.Section, e.Problem)
}

// compactJSON encodes v as compact JSON without HTML escaping.
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// digestOf binds hashes in SectionNames order.
func digestOf(hashes map[string]string) string {
	var b strings.Builder
	b.WriteString(Format + "\n")
	for _, n := range SectionNames {
		fmt.Fprintf(&b, "%s %s\n", n, hashes[n])
	}
	return sumHex([]byte(b.String()))
}

// Seal sets rec's format, section hashes and digest.
func Seal(rec *Record) error {
	raw, err := compactJSON(rec.Sections)
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	members, err := sectionMembers(raw)
	if err != nil {
		return err
	}
	rec.Format = Format
	rec.Hashes = map[string]string{}
	for _, n := range SectionNames {
		rec.Hashes[n] = sumHex(members[n])
	}
	rec.Digest = digestOf(rec.Hashes)
	return nil
}

// Encode seals rec and returns the document: indented JSON ending in a newline.
func Encode(rec *Record) ([]byte, error) {
	if err := Seal(rec); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rec); err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return b.Bytes(), nil
}

// sectionMembers splits the sections object into its members' compact bytes.
func sectionMembers(raw []byte) (map[string][]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &IntegrityError{Section: "document", Problem: "\"sections\" is not a JSON object: " + err.Error()}
	}
	out := map[string][]byte{}
	for k, v := range m {
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return nil, &IntegrityError{Section: k, Problem: err.Error()}
		}
		out[k] = c.Bytes()
	}
	return out, nil
}

// Checked is what Check verified.
type Checked struct {
	Digest   string
	Sections []string
	Record   Record
}

// Check verifies body's section hashes and digest.
func Check(body []byte) (*Checked, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, &IntegrityError{Section: "document", Problem: "not one JSON object: " + err.Error()}
	}
	if keys := sortedKeys(top); !slices.Equal(keys, []string{"digest", "format", "hashes", "sections"}) {
		return nil, &IntegrityError{Section: "document", Problem: fmt.Sprintf("members %q, want digest, format, hashes and sections", keys)}
	}
	var format, digest string
	var hashes map[string]string
	if json.Unmarshal(top["format"], &format) != nil || format != Format {
		return nil, &IntegrityError{Section: "document", Problem: fmt.Sprintf("format %s, want %q", top["format"], Format)}
	}
	if err := json.Unmarshal(top["hashes"], &hashes); err != nil {
		return nil, &IntegrityError{Section: "hashes", Problem: "not an object of strings: " + err.Error()}
	}
	if err := json.Unmarshal(top["digest"], &digest); err != nil {
		return nil, &IntegrityError{Section: "digest", Problem: "not a string"}
	}
	members, err := sectionMembers(top["sections"])
	if err != nil {
		return nil, err
	}
	want := slices.Sorted(slices.Values(SectionNames))
	if got := sortedKeys(members); !slices.Equal(got, want) {
		return nil, &IntegrityError{Section: "document", Problem: fmt.Sprintf("sections %q, want %q", got, want)}
	}
	if got := sortedKeys(hashes); !slices.Equal(got, want) {
		return nil, &IntegrityError{Section: "hashes", Problem: fmt.Sprintf("hashes of %q, want %q", got, want)}
	}
	for _, n := range SectionNames {
		if got := sumHex(members[n]); got != hashes[n] {
			return nil, &IntegrityError{Section: n, Problem: fmt.Sprintf("content hashes to %s, the record says %s", got, hashes[n])}
		}
	}
	if got := digestOf(hashes); got != digest {
		return nil, &IntegrityError{Section: "digest", Problem: fmt.Sprintf("the hashes digest to %s, the record says %s", got, digest)}
	}
	c := &Checked{Digest: digest, Sections: SectionNames}
	if err := json.Unmarshal(body, &c.Record); err != nil {
		return nil, &IntegrityError{Section: "document", Problem: "does not decode as a record: " + err.Error()}
	}
	return c, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
