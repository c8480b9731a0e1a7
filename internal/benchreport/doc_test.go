package benchreport

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// TestDocMatchesLog re-renders docs/BENCHMARKS.md's generated section from the log it names
// and fails when the two differ: a figure edited by hand, a log changed or replaced after the
// doc was written, or a renderer changed without `make bench` (or genbench) being re-run.
func TestDocMatchesLog(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, logPath, err := Section(string(doc))
	if err != nil {
		t.Fatalf("docs/BENCHMARKS.md: %v", err)
	}
	f, err := os.Open(filepath.Join(root, logPath))
	if err != nil {
		t.Fatalf("docs/BENCHMARKS.md names %s, which cannot be read: %v (check it in, or run make bench)", logPath, err)
	}
	defer f.Close()
	l, err := Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", logPath, err)
	}
	if got := Render(l, logPath); got != section {
		t.Errorf("docs/BENCHMARKS.md's generated section is not what %s renders to; regenerate it:\n"+
			"  go run ./internal/benchreport/genbench %s docs/BENCHMARKS.md\nfirst difference: %s",
			logPath, logPath, firstDiff(section, got))
	}
}

// TestReadmeQuotesOnlyBenchFigures fails when README.md quotes a timing figure (850 ms, 1.5 s,
// 1.57×) that is not in the generated section of docs/BENCHMARKS.md: the README may quote only
// what `make bench` measured, with its machine and load beside it.
func TestReadmeQuotesOnlyBenchFigures(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, _, err := Section(string(doc))
	if err != nil {
		t.Fatalf("docs/BENCHMARKS.md: %v", err)
	}
	for _, f := range Unbacked(string(readme), section) {
		t.Errorf("README.md quotes %q, which is no figure of docs/BENCHMARKS.md's generated section: quote a row of `make bench`'s output, or point to the section instead", f)
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + " of the section:\n  doc:      " + x + "\n  rendered: " + y
		}
	}
	return "(none)"
}
