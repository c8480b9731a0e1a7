package broker

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

var (
	oidA = strings.Repeat("a", 40)
	oidB = strings.Repeat("b", 40)
	zero = strings.Repeat("0", 40)
)

func pkts(lines ...string) string {
	var sb strings.Builder
	for _, l := range lines {
		if l == "0000" {
			sb.WriteString(l)
			continue
		}
		sb.Write(pktLine(l))
	}
	return sb.String()
}

// TestReadPushRequest: the command parser accepts what git sends and fails closed on every
// malformed, truncated or ambiguous body.
func TestReadPushRequest(t *testing.T) {
	good := []struct {
		name, body string
		refs       []string
		options    []string
	}{
		{"one command", pkts(oidA+" "+oidB+" refs/heads/x\x00report-status side-band-64k\n", "0000"), []string{"refs/heads/x"}, nil},
		{"no newline, no caps", pkts(oidA+" "+oidB+" refs/heads/x", "0000"), []string{"refs/heads/x"}, nil},
		{"two commands", pkts(oidA+" "+oidB+" refs/heads/x\x00report-status\n", zero+" "+oidB+" refs/tags/v1\n", "0000"), []string{"refs/heads/x", "refs/tags/v1"}, nil},
		{"probe", "0000", nil, nil},
		{"push options", pkts(oidA+" "+oidB+" refs/heads/x\x00push-options\n", "0000", "ci.skip\n", "0000"), []string{"refs/heads/x"}, []string{"ci.skip"}},
		{"sha256", pkts(strings.Repeat("c", 64)+" "+strings.Repeat("d", 64)+" refs/heads/x\x00object-format=sha256\n", "0000"), []string{"refs/heads/x"}, nil},
	}
	for _, c := range good {
		p, err := readPushRequest(bufio.NewReader(strings.NewReader(c.body)))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var refs []string
		for _, u := range p.updates {
			refs = append(refs, u.Ref)
		}
		if fmt.Sprint(refs) != fmt.Sprint(c.refs) || fmt.Sprint(p.options) != fmt.Sprint(c.options) {
			t.Errorf("%s: refs %v options %v, want %v %v", c.name, refs, p.options, c.refs, c.options)
		}
	}
	cmd := oidA + " " + oidB + " refs/heads/x"
	bad := []struct{ name, body string }{
		{"empty body", ""},
		{"missing flush", pkts(cmd + "\n")},
		{"truncated length", "00"},
		{"truncated line", pkts(cmd + "\n")[:20]},
		{"length above 65520", "fff1" + strings.Repeat("x", 65520)},
		{"special packet 0001", "0001" + pkts("0000")},
		{"length 0003", "0003"},
		{"length not hex", "00zz" + cmd},
		{"length with sign", "+02a" + cmd},
		{"NUL in second command", pkts(cmd+"\x00a\n", oidA+" "+oidB+" refs/heads/y\x00b\n", "0000")},
		{"two NULs", pkts(cmd+"\x00a\x00b\n", "0000")},
		{"upper-case oid", pkts(strings.ToUpper(oidA)+" "+oidB+" refs/heads/x\n", "0000")},
		{"short oid", pkts(oidA[:39]+" "+oidB+" refs/heads/x\n", "0000")},
		{"mixed oid lengths", pkts(cmd+"\n", strings.Repeat("c", 64)+" "+strings.Repeat("d", 64)+" refs/heads/y\n", "0000")},
		{"two spaces", pkts(oidA+"  "+oidB+" refs/heads/x\n", "0000")},
		{"extra field", pkts(cmd+" extra\n", "0000")},
		{"duplicate ref", pkts(cmd+"\n", cmd+"\n", "0000")},
		{"shallow line", pkts("shallow "+oidA+"\n", cmd+"\n", "0000")},
		{"signed push", pkts(cmd+"\x00report-status push-cert=123\n", "0000")},
		{"ref outside refs/", pkts(oidA+" "+oidB+" HEAD\n", "0000")},
		{"ref with ..", pkts(oidA+" "+oidB+" refs/heads/a..b\n", "0000")},
		{"ref with .lock", pkts(oidA+" "+oidB+" refs/heads/x.lock\n", "0000")},
		{"ref with space", pkts(oidA+" "+oidB+" refs/heads/a b\n", "0000")},
		{"ref with glob", pkts(oidA+" "+oidB+" refs/heads/*\n", "0000")},
		{"ref with //", pkts(oidA+" "+oidB+" refs//heads\n", "0000")},
		{"ref with @{", pkts(oidA+" "+oidB+" refs/heads/a@{1}\n", "0000")},
		{"ref ending in /", pkts(oidA+" "+oidB+" refs/heads/\n", "0000")},
		{"ref with control char", pkts(oidA+" "+oidB+" refs/heads/a\x7f\n", "0000")},
		{"options without flush", pkts(cmd+"\x00push-options\n", "0000", "opt\n")},
		{"option with NUL", pkts(cmd+"\x00push-options\n", "0000", "a\x00b\n", "0000")},
	}
	for _, c := range bad {
		if p, err := readPushRequest(bufio.NewReader(strings.NewReader(c.body))); err == nil {
			t.Errorf("%s: accepted as %+v", c.name, p)
		}
	}
}

// TestReadPushPackRequired: a push with an update carries a pack, and one with deletes only
// carries nothing after its commands.
func TestReadPushPackRequired(t *testing.T) {
	for name, body := range map[string]string{
		"update without pack":       pkts(oidA+" "+oidB+" refs/heads/x\n", "0000"),
		"delete with trailing data": pkts(oidA+" "+zero+" refs/heads/x\n", "0000") + "PACK",
		"probe with trailing data":  "0000x",
	} {
		if _, _, err := readPush(bufio.NewReader(strings.NewReader(body))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, _, err := readPush(bufio.NewReader(strings.NewReader(pkts(oidA+" "+zero+" refs/heads/x\n", "0000")))); err != nil {
		t.Errorf("delete: %v", err)
	}
}

// testPack writes a version 2 pack of objects; a negative typ is an offset delta against the
// object that many entries back, whose data is the delta.
type testObj struct {
	typ  int
	data []byte
}

func writeTestPack(objs []testObj) []byte {
	var buf bytes.Buffer
	buf.WriteString("PACK")
	binary.Write(&buf, binary.BigEndian, uint32(2))
	binary.Write(&buf, binary.BigEndian, uint32(len(objs)))
	var offsets []int
	for i, o := range objs {
		offsets = append(offsets, buf.Len())
		typ := o.typ
		if typ < 0 {
			typ = objOfsDelta
		}
		size := len(o.data)
		c := byte(typ<<4) | byte(size&15)
		size >>= 4
		for size > 0 {
			buf.WriteByte(c | 0x80)
			c, size = byte(size&0x7f), size>>7
		}
		buf.WriteByte(c)
		if o.typ < 0 {
			rel := offsets[i] - offsets[i+o.typ]
			var enc []byte
			enc = append(enc, byte(rel&0x7f))
			for rel >>= 7; rel > 0; rel >>= 7 {
				rel--
				enc = append([]byte{byte(0x80 | rel&0x7f)}, enc...)
			}
			buf.Write(enc)
		}
		zw := zlib.NewWriter(&buf)
		zw.Write(o.data)
		zw.Close()
	}
	sum := sha1.Sum(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes()
}

// insertDelta is a git delta that rebuilds target from base by inserting every byte.
func insertDelta(base, target []byte) []byte {
	varint := func(n int) []byte {
		var out []byte
		for {
			c := byte(n & 0x7f)
			if n >>= 7; n > 0 {
				out = append(out, c|0x80)
				continue
			}
			return append(out, c)
		}
	}
	d := append(varint(len(base)), varint(len(target))...)
	for len(target) > 0 {
		n := min(127, len(target))
		d = append(append(d, byte(n)), target[:n]...)
		target = target[n:]
	}
	return d
}

func commitText(parents ...string) []byte {
	s := "tree " + strings.Repeat("4b825dc642cb6eb9a060e54bf8d69288fbee4904"[:40], 1) + "\n"
	for _, p := range parents {
		s += "parent " + p + "\n"
	}
	return []byte(s + "author A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n\nm\n")
}

// TestScanPackFastForward: commits are named as git names them, a commit held as an offset
// delta against another is resolved, a chain of parents through the pack proves a
// fast-forward, and anything the pack cannot show is not proven.
func TestScanPackFastForward(t *testing.T) {
	old := strings.Repeat("e", 40)
	c1 := commitText(old)
	n1 := objectName(sha1.New, "commit", c1)
	c2 := commitText(n1)
	n2 := objectName(sha1.New, "commit", c2)
	blob := []byte("hello\n")
	pack := writeTestPack([]testObj{{objCommit, c1}, {objBlob, blob}, {-2, insertDelta(c1, c2)}})
	pc, err := scanPack(bufio.NewReader(bytes.NewReader(pack)), 40)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pc[n2]; !ok {
		t.Fatalf("the delta commit %s was not resolved: %v", n2, pc)
	}
	for _, c := range []struct {
		old, new string
		want     bool
	}{
		{old, n2, true}, {old, n1, true}, {n1, n2, true}, {n2, n2, true},
		{n2, n1, false},                       // a rewind
		{strings.Repeat("f", 40), n2, false},  // another base
		{old, strings.Repeat("f", 40), false}, // a new commit not in the pack
	} {
		if got := pc.fastForward(c.old, c.new); got != c.want {
			t.Errorf("fastForward(%.7s, %.7s) = %v, want %v", c.old, c.new, got, c.want)
		}
	}
	// Every defect of the pack refuses it.
	broken := map[string][]byte{
		"truncated":       pack[:len(pack)-30],
		"bad checksum":    append(append([]byte{}, pack[:len(pack)-1]...), pack[len(pack)-1]^1),
		"trailing bytes":  append(append([]byte{}, pack...), 'x'),
		"count too high":  func() []byte { p := append([]byte{}, pack...); p[11]++; return p }(),
		"not a pack":      []byte("PACX" + string(pack[4:])),
		"version 4":       func() []byte { p := append([]byte{}, pack...); p[7] = 4; return p }(),
		"only the header": pack[:12],
	}
	for name, p := range broken {
		if _, err := scanPack(bufio.NewReader(bytes.NewReader(p)), 40); err == nil {
			t.Errorf("%s pack accepted", name)
		}
	}
	// A size header that lies about the object is refused.
	lie := writeTestPack([]testObj{{objBlob, blob}})
	lie[12] = byte(objBlob<<4) | 5 // declares 5 bytes, inflates to 6
	if _, err := scanPack(bufio.NewReader(bytes.NewReader(lie)), 40); err == nil {
		t.Error("an object inflating beyond its declared size was accepted")
	}
}

// TestGitRulesJudge: refs outside the patterns, deletes and unproven updates are refused, each
// with a reason, and one refusal refuses the whole push.
func TestGitRulesJudge(t *testing.T) {
	pc := packCommits{oidB: {oidA}}
	g := &GitRules{Push: []string{"refs/heads/corral/*", "refs/tags/v1"}}
	cases := []struct {
		name string
		rule *GitRules
		cmds []RefUpdate
		want bool
	}{
		{"fast-forward", g, []RefUpdate{{oidA, oidB, "refs/heads/corral/x"}}, true},
		{"create", g, []RefUpdate{{zero, oidB, "refs/heads/corral/x"}}, true},
		{"exact pattern", g, []RefUpdate{{zero, oidB, "refs/tags/v1"}}, true},
		{"outside patterns", g, []RefUpdate{{oidA, oidB, "refs/heads/main"}}, false},
		{"prefix is not a match", g, []RefUpdate{{zero, oidB, "refs/heads/corral"}}, false},
		{"exact pattern is not a prefix", g, []RefUpdate{{zero, oidB, "refs/tags/v10"}}, false},
		{"delete", g, []RefUpdate{{oidA, zero, "refs/heads/corral/x"}}, false},
		{"unproven", g, []RefUpdate{{oidB, oidA, "refs/heads/corral/x"}}, false},
		{"one of two", g, []RefUpdate{{oidA, oidB, "refs/heads/corral/x"}, {oidA, oidB, "refs/heads/main"}}, false},
		{"delete allowed", &GitRules{Push: g.Push, Delete: true}, []RefUpdate{{oidA, zero, "refs/heads/corral/x"}}, true},
		{"force allowed", &GitRules{Push: g.Push, Force: true}, []RefUpdate{{oidB, oidA, "refs/heads/corral/x"}}, true},
		{"narrowed out", &GitRules{Push: g.Push, Narrowed: true, Narrow: []string{"refs/heads/corral/a*"}}, []RefUpdate{{zero, oidB, "refs/heads/corral/x"}}, false},
		{"narrowed in", &GitRules{Push: g.Push, Narrowed: true, Narrow: []string{"refs/heads/corral/x"}}, []RefUpdate{{zero, oidB, "refs/heads/corral/x"}}, true},
		{"narrowed to nothing", &GitRules{Push: g.Push, Narrowed: true}, []RefUpdate{{zero, oidB, "refs/heads/corral/x"}}, false},
		{"no patterns", &GitRules{}, []RefUpdate{{zero, oidB, "refs/heads/corral/x"}}, false},
	}
	for _, c := range cases {
		ds, ok := c.rule.judge(c.cmds, pc)
		if ok != c.want {
			t.Errorf("%s: allowed %v, want %v (%+v)", c.name, ok, c.want, ds)
		}
		for _, d := range ds {
			if (d.Decision == Deny) != !ok || (d.Decision == Deny && !strings.HasPrefix(d.Reason, "corral: ")) {
				t.Errorf("%s: decision %+v with push verdict %v", c.name, d, ok)
			}
		}
	}
	for _, p := range []string{"refs/heads/*x", "heads/x", "refs/heads/a..b*", "*", "refs/heads/**"} {
		if checkRefPattern(p) == nil {
			t.Errorf("pattern %q accepted", p)
		}
	}
	for _, p := range []string{"refs/heads/corral/*", "refs/*", "refs/heads/main", "refs/heads/agent-*"} {
		if err := checkRefPattern(p); err != nil {
			t.Errorf("pattern %q refused: %v", p, err)
		}
	}
}

// FuzzReadPush: no input makes the push reader panic, and whatever it accepts has only valid
// object names and ref names.
func FuzzReadPush(f *testing.F) {
	f.Add([]byte(pkts(oidA+" "+oidB+" refs/heads/x\x00report-status\n", "0000")))
	f.Add([]byte(pkts(oidA+" "+zero+" refs/heads/x\x00push-options\n", "0000", "o\n", "0000")))
	f.Add(append([]byte(pkts(zero+" "+oidB+" refs/heads/x\n", "0000")), writeTestPack([]testObj{{objCommit, commitText(oidA)}})...))
	f.Add([]byte("0000"))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, _, err := readPush(bufio.NewReader(bytes.NewReader(body)))
		if err != nil {
			return
		}
		for _, u := range p.updates {
			if !validOID(u.Old) || !validOID(u.New) || checkRefName(u.Ref) != nil {
				t.Fatalf("accepted %+v", u)
			}
		}
	})
}
