package broker

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadLog: the rotated generation comes before the current log, lines that are not entries
// (garbage, an object without a decision) are counted and skipped, and a missing log is empty.
func TestReadLog(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "egress.jsonl")
	if es, bad, err := ReadLog(p); err != nil || len(es) != 0 || bad != 0 {
		t.Fatalf("missing log: %v %d %v", es, bad, err)
	}
	old := `{"host":"old.example","port":443,"decision":"deny","reason":"host not in allow-list"}` + "\n"
	cur := `{"host":"new.example","port":443,"decision":"allow"}` + "\nnot json\n{\"host\":\"x\"}\n"
	if err := os.WriteFile(p+".1", []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(cur), 0o600); err != nil {
		t.Fatal(err)
	}
	es, bad, err := ReadLog(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Host != "old.example" || es[1].Host != "new.example" || bad != 2 {
		t.Fatalf("got %+v, bad %d; want old.example then new.example, 2 bad lines", es, bad)
	}
}
