package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/vm"
)

// readLog reads an egress log (and its rotated predecessor) the way the egress command does;
// the command passes its own reader in, so the tests pass this one.
func readLog(path string) ([]broker.Entry, int, error) {
	var out []broker.Entry
	bad := 0
	for _, p := range []string{path + ".1", path} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e broker.Entry
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.Decision == "" {
				bad++
				continue
			}
			out = append(out, e)
		}
		f.Close()
	}
	return out, bad, nil
}

// testHome returns a hermetic $CORRAL_HOME in a temp dir.
func testHome(t *testing.T) home.Home {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("CORRAL_HOME", filepath.Join(dir, "corral"))
	t.Setenv("LIMA_HOME", filepath.Join(dir, "corral", "lima"))
	h, err := home.Resolve(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// writeMeta writes a box's metadata file as vm.Manager.WriteMeta does.
func writeMeta(t *testing.T, h home.Home, meta vm.Meta) {
	t.Helper()
	if err := os.MkdirAll(h.Boxes(), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(meta, "", "  ")
	if err := os.WriteFile(h.BoxMeta(meta.Box), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// logEntry appends one entry to a box's egress log with the broker's own writer.
func logEntry(t *testing.T, h home.Home, box string, e broker.Entry) {
	t.Helper()
	if err := os.MkdirAll(h.Logs(), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := broker.OpenLog(context.Background(), h.EgressLog(box), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Box = box
	if err := l.Write(e); err != nil {
		t.Fatal(err)
	}
}

func deny(host string, port int, reason string) broker.Entry {
	return broker.Entry{Method: "CONNECT", Host: host, Port: port, Decision: broker.Deny, Reason: reason, Status: 403}
}

func allow(host string, port int, rule string) broker.Entry {
	return broker.Entry{Method: "CONNECT", Host: host, Port: port, Decision: broker.Allow, Rule: rule, Status: 200}
}
