package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-corral/git-corral/broker"
)

// TestReadLogCountsBadLines: lines that are neither a run nor a decision are counted, not
// dropped silently, and a missing log is empty.
func TestReadLogCountsBadLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sandbox.jsonl")
	must(t, os.WriteFile(path, []byte(`{"event":"sandbox-run","argv":["true"],"exitCode":0}
{"box":"sandbox","decision":"deny","host":"x.test","status":403}
not json
{"event":"something-else"}
`), 0o600))
	c, err := ReadLog[broker.Entry](path)
	if err != nil || len(c.Runs) != 1 || len(c.Decisions) != 1 || c.Bad != 2 {
		t.Errorf("got %+v, %v; want 1 run, 1 decision, 2 bad", c, err)
	}
	if c, err := ReadLog[broker.Entry](filepath.Join(dir, "missing")); err != nil || len(c.Runs) != 0 {
		t.Errorf("missing log: %+v, %v", c, err)
	}
}
