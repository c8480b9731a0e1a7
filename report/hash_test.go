package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestCheckNamesTheChangedSection changes one digit inside each section in turn: Check names
// that section. Control: the unchanged document passes.
func TestCheckNamesTheChangedSection(t *testing.T) {
	f := newFixture(t)
	_, body := encoded(t, f.options())
	if _, err := Check(body); err != nil {
		t.Fatalf("Check(unchanged) = %v", err)
	}
	starts := map[string]int{}
	for _, n := range SectionNames {
		starts[n] = bytes.Index(body, []byte("\n    \""+n+"\": "))
	}
	for _, n := range SectionNames {
		i := starts[n] + len("\n    \""+n+"\": ")
		for body[i] < '0' || body[i] > '9' {
			i++
		}
		bad := bytes.Clone(body)
		bad[i] = '0' + (bad[i]-'0'+1)%10
		_, err := Check(bad)
		if SectionOf(err) != n {
			t.Errorf("digit changed in %q: Check = %v, want that section named", n, err)
		}
	}
	// The digest itself.
	i := bytes.LastIndex(body, []byte(`"digest": "sha256:`)) + len(`"digest": "sha256:`)
	bad := bytes.Clone(body)
	bad[i] ^= 0x01
	if _, err := Check(bad); SectionOf(err) != "digest" {
		t.Errorf("digest changed: Check = %v", err)
	}
	// A section left out.
	bad = bytes.Replace(body, []byte(`"snapshots": {`), []byte(`"snapshotz": {`), 1)
	if _, err := Check(bad); err == nil || !strings.Contains(err.Error(), "sections") {
		t.Errorf("renamed section: Check = %v", err)
	}
}

// TestSplit separates a document from its signature as the man page's sed commands do.
func TestSplit(t *testing.T) {
	doc := []byte("{\n  \"a\": \"-----BEGIN SSH SIGNATURE-----\"\n}\n")
	sig := []byte(armorBegin + "\nAAAA\n" + armorEnd + "\n")
	b, s := Split(append(bytes.Clone(doc), sig...))
	if !bytes.Equal(b, doc) || !bytes.Equal(s, sig) {
		t.Fatalf("Split = %q, %q", b, s)
	}
	if b, s := Split(doc); !bytes.Equal(b, doc) || s != nil {
		t.Fatalf("Split(unsigned) = %q, %q", b, s)
	}
}
