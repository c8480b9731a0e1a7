package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// makeTestLog is the tail of a make test output: each suite's lines as it ends, then the same
// lines again under "== test suites" (scripts/test-suites.sh).
const makeTestLog = `run: date=2026-12-05T17:11:39Z commit=3eff22e8601f
machine: cpu="AMD EPYC" cores=2 kernel=6.18 load="3.52 5.92 8.65"
group e2e TestAgents pass time=548s
suite e2e tests=99 passed=99 failed=0 skipped=0 time=1984s

== test suites
group e2e TestAgents pass time=548s
suite e2e tests=99 passed=99 failed=0 skipped=0 time=1984s
total: time=2811s load="3.11 3.68 3.83"
99 passed, 0 failed, 0 skipped
`

const e2eDoc = "# E2E\n\n<!-- last-run:begin -->\nold\n<!-- last-run:end -->\n\nafter\n"

// record runs scripts/e2e-record.sh on log against a copy of e2eDoc and returns the new doc.
func record(t *testing.T, log string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	logPath, doc := filepath.Join(dir, "make-test.log"), filepath.Join(dir, "E2E.md")
	if err := os.WriteFile(logPath, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, []byte(e2eDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../../scripts/e2e-record.sh", logPath)
	cmd.Env = append(os.Environ(), "E2E_DOC="+doc)
	if out, err := cmd.CombinedOutput(); err != nil {
		return string(out), err
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

// TestRecordReadsEachRowOnce: the record holds each group and suite row once although make
// test prints them twice, keeps what is outside the markers, and a log cut short is refused
// with the file left as it was.
func TestRecordReadsEachRowOnce(t *testing.T) {
	doc, err := record(t, makeTestLog)
	if err != nil {
		t.Fatalf("e2e-record.sh: %v: %s", err, doc)
	}
	for _, row := range []string{"| e2e | `TestAgents` | pass | 548s |", "| e2e | 99 | 99 | 0 | 0 | 1984s |"} {
		if n := strings.Count(doc, row); n != 1 {
			t.Errorf("row %q appears %d times, want once:\n%s", row, n, doc)
		}
	}
	if !strings.Contains(doc, "- whole make test: time=2811s") || !strings.HasSuffix(doc, "\nafter\n") || strings.Contains(doc, "\nold\n") {
		t.Errorf("record:\n%s", doc)
	}
	// Control: a log cut before its closing lines is refused.
	cut := makeTestLog[:strings.Index(makeTestLog, "total:")]
	if out, err := record(t, cut); err == nil || !strings.Contains(out, "not the output of a whole make test") {
		t.Errorf("a cut log: err %v, output %q: want a refusal", err, out)
	}
}
