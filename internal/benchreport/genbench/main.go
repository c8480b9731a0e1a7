// Command genbench writes the generated section of docs/BENCHMARKS.md (between
// benchreport.BeginMarker and EndMarker) from a log of `make bench`:
//
//	go run ./internal/benchreport/genbench bench/results/bench-20261205T1700Z.log docs/BENCHMARKS.md
//
// Run it from the repository's root, with the log's path relative to it: the section names and
// links that path, and internal/benchreport's tests re-render the section from it.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/internal/benchreport"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: genbench bench/results/bench-TIME.log docs/BENCHMARKS.md")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "genbench: error:", err)
		os.Exit(1)
	}
}

func run(logPath, docPath string) error {
	if filepath.IsAbs(logPath) {
		return fmt.Errorf("log %q: give its path relative to the repository's root (bench/results/...), as the section names it", logPath)
	}
	f, err := os.Open(logPath)
	if err != nil {
		return fmt.Errorf("open the log: %w", err)
	}
	defer f.Close()
	l, err := benchreport.Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", logPath, err)
	}
	doc, err := os.ReadFile(docPath)
	if err != nil {
		return fmt.Errorf("read the doc: %w", err)
	}
	out, err := benchreport.Splice(string(doc), benchreport.Render(l, filepath.ToSlash(logPath)))
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	if err := atomicfile.Write(docPath, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", docPath, err)
	}
	return nil
}
