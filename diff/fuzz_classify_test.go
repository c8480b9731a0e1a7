package diff

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzClassify runs the real classifier on a fuzzed change: a file added at a fuzzed path with
// fuzzed content and execute bit, a symlink beside it with a fuzzed target, and a Makefile and a
// case- or normalisation-variant of the path in the same tree. Each property is a documented
// classification rule (classify.go, catalogue.go), written out again here without the
// classifier's helpers:
//   - a path the catalogue matches in any ASCII case is flagged, in the rule's group, and the
//     catalogue matches a path exactly when it matches its lower- and upper-case forms;
//   - a path component that is ".git" in another case is flagged high;
//   - a name holding a control, format (bidi, zero-width), private-use or invalid UTF-8
//     character is flagged high; so is a content line holding one (high in a host-executed
//     file);
//   - a new executable file is flagged high; a GNUmakefile or makefile added beside a Makefile
//     is flagged high; a path whose case or Unicode normalisation variant is also in the tree is
//     flagged high as a collision;
//   - a symlink whose target is absolute, starts with "~", or climbs out of the tree is high.
func FuzzClassify(f *testing.F) {
	f.Add("sub/MAKEFILE", []byte("all:\n\techo hi\n"), true, "../../etc/passwd")
	dir := f.TempDir() // one fixture directory, rewritten for each input (a fresh one per input costs most of the time)
	f.Fuzz(func(t *testing.T, p string, content []byte, exec bool, link string) {
		if !fuzzablePath(p) || len(content) > 1<<16 || link == "" || strings.IndexByte(link, 0) >= 0 || len(link) > 1024 {
			return
		}
		mode := os.FileMode(0o644)
		if exec {
			mode = 0o755
		}
		file, sym := filepath.Join(dir, "f"), filepath.Join(dir, "l")
		os.Remove(file)
		os.Remove(sym)
		if os.WriteFile(file, content, mode) != nil || os.Chmod(file, mode) != nil || os.Symlink(link, sym) != nil {
			t.Skip("cannot create the fixture") // this input proves nothing either way
		}
		r := classifyFixture(t, p, file, sym)
		byPath := map[string][]Finding{}
		for _, fd := range r.Findings {
			byPath[fd.Path] = append(byPath[fd.Path], fd)
		}
		checkPathRules(t, p, byPath[p], content, exec)
		checkSymlinkRule(t, p, link, byPath[symlinkPath(p)])
	})
}

// fuzzablePath accepts a clean relative slash path of at most 8 components without NUL.
func fuzzablePath(p string) bool {
	if p == "" || len(p) > 512 || strings.IndexByte(p, 0) >= 0 || path.Clean(p) != p || path.IsAbs(p) {
		return false
	}
	comps := strings.Split(p, "/")
	for _, c := range comps {
		if c == "." || c == ".." || c == "" {
			return false
		}
	}
	return len(comps) <= 8 && !strings.HasPrefix(p, ".git/") && p != ".git"
}

// symlinkPath is where the fixture puts the symlink: beside p.
func symlinkPath(p string) string { return path.Join(path.Dir(p), "zz-link") }

// classifyFixture builds the tree (p added, its symlink added, a Makefile and a variant of p
// already there) and classifies it.
func classifyFixture(t *testing.T, p, file, sym string) *Report {
	t.Helper()
	fe, err := lstatEntry(file, p)
	if err != nil {
		t.Fatal(err)
	}
	le, err := lstatEntry(sym, symlinkPath(p))
	if err != nil {
		t.Fatal(err)
	}
	abs := map[*entry]string{fe: file, le: sym}
	cur := []*entry{fe, le}
	for _, other := range append([]string{path.Join(path.Dir(p), "Makefile")}, variants(p)...) {
		if other != p && other != le.Path {
			oe := *fe
			oe.Path = other
			cur = append(cur, &oe)
			abs[&oe] = file
		}
	}
	sort.Slice(cur, func(i, j int) bool { return cur[i].Path < cur[j].Path })
	c := &classifier{o: Options{MaxText: 1 << 20}, cur: cur, absOf: func(e *entry) string { return abs[e] }}
	r := &Report{Changes: []Change{{Path: p, Status: "added", cur: fe}, {Path: le.Path, Status: "added", cur: le}}}
	c.classify(r)
	return r
}

// variants are the other spellings of p that a case- or normalisation-insensitive host opens as
// p: its NFC and NFD forms and (for a p with more than one component) its base name swapped to
// the other ASCII case. The base-name swap keeps the parent directories as they are, so it stays
// in the same directory as p.
func variants(p string) []string {
	d, b := path.Split(p)
	return []string{norm.NFC.String(p), norm.NFD.String(p), d + swapASCIICase(b)}
}

func swapASCIICase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, s)
}

// checkPathRules checks the rules about the added file at p against its findings fs.
func checkPathRules(t *testing.T, p string, fs []Finding, content []byte, exec bool) {
	t.Helper()
	lower, upper := Match(asciiLower(p)), Match(asciiUpper(p))
	if rule := Match(p); (rule == nil) != (lower == nil) || (rule == nil) != (upper == nil) {
		t.Fatalf("catalogue matches %q (%v) but not its other case (lower %v, upper %v)", p, rule, lower, upper)
	}
	hostExec := lower != nil
	if hostExec && !hasFinding(fs, lower.Group, "") {
		t.Fatalf("%q matches catalogue rule %q but has no %s finding: %+v", p, lower.Pattern, lower.Group, fs)
	}
	for _, comp := range strings.Split(p, "/") {
		if asciiLower(comp) == ".git" && comp != ".git" && !hasFinding(fs, "git", "case variant of .git") {
			t.Fatalf("%q holds a case variant of .git but is not flagged: %+v", p, fs)
		}
	}
	if hiddenName(p) && !hasFinding(fs, "filesystem", "control, bidi or invisible") {
		t.Fatalf("name %q holds a hidden character but is not flagged: %+v", p, fs)
	}
	if exec && !hasFinding(fs, "filesystem", "new executable") {
		t.Fatalf("new executable %q not flagged: %+v", p, fs)
	}
	if b := path.Base(p); (b == "GNUmakefile" || b == "makefile") && !hasFinding(fs, "make", "shadows") {
		t.Fatalf("%q beside a Makefile not flagged as shadowing it: %+v", p, fs)
	}
	for _, v := range variants(p) {
		if v != p && !hasFinding(fs, "filesystem", "collision") {
			t.Fatalf("%q and its variant %q in one tree: no collision finding: %+v", p, v, fs)
		}
	}
	if utf8.Valid(content) && hiddenContent(string(content)) {
		for _, fd := range fs {
			if fd.Group == "text" && (fd.Severity == High || !hostExec) {
				return
			}
		}
		t.Fatalf("content of %q holds a hidden character but is not flagged (host-executed %v): %+v", p, hostExec, fs)
	}
}

// checkSymlinkRule: a symlink whose target leaves the tree is flagged high.
func checkSymlinkRule(t *testing.T, p, link string, fs []Finding) {
	t.Helper()
	if !leavesTree(path.Dir(p), link) {
		return
	}
	for _, fd := range fs {
		if fd.Group == "filesystem" && fd.Severity == High && strings.Contains(fd.Reason, "symlink") {
			return
		}
	}
	t.Fatalf("symlink in %q to %q leaves the tree but is not flagged high: %+v", path.Dir(p), link, fs)
}

// leavesTree walks target's components from dir: absolute, "~" or climbing above the top level.
func leavesTree(dir, target string) bool {
	if strings.HasPrefix(target, "/") || strings.HasPrefix(target, "~") {
		return true
	}
	var stack []string
	if dir != "." {
		stack = strings.Split(dir, "/")
	}
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(stack) == 0 {
				return true
			}
			stack = stack[:len(stack)-1]
		default:
			stack = append(stack, c)
		}
	}
	return false
}

func hasFinding(fs []Finding, group, reason string) bool {
	for _, fd := range fs {
		if fd.Group == group && strings.Contains(fd.Reason, reason) && (reason == "" || fd.Severity == High) {
			return true
		}
	}
	return false
}

// hiddenName: a control, format or private-use character, or a byte that is not UTF-8.
func hiddenName(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co) {
			return true
		}
	}
	return false
}

// hiddenContent: a line holds a control (other than tab, and CR ending the line) or a format
// or private-use character.
func hiddenContent(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if hiddenName(strings.ReplaceAll(strings.TrimSuffix(line, "\r"), "\t", " ")) {
			return true
		}
	}
	return false
}

func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return r
	}, s)
}

func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}
