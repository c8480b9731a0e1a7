package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogFollowsRotationByAnotherWriter: when another writer (another process, in effect)
// rotates or replaces the file, the next line goes to the file now at the path, never into the
// rotated-away file, and the size cap is judged on that file.
func TestLogFollowsRotationByAnotherWriter(t *testing.T) {
	ctx := context.Background()
	line := Entry{Host: strings.Repeat("x", 100), Decision: Deny}
	tests := []struct {
		name    string
		replace func(t *testing.T, path string)
		want    int // lines in the file at the path after the follower's write
	}{
		{"control: nobody else touched the file", func(*testing.T, string) {}, 3},
		{"rotated by a writer at its cap", func(t *testing.T, path string) {
			small, err := OpenLog(ctx, path, 300)
			if err != nil {
				t.Fatal(err)
			}
			defer small.Close()
			small.Write(line) // the file holds two lines already: this one rotates it
		}, 2},
		{"renamed away and recreated", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "egress.jsonl")
			follower, err := OpenLog(ctx, path, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer follower.Close()
			follower.Write(line)
			follower.Write(line)
			tc.replace(t, path)
			if err := follower.Write(Entry{Host: "follower", Decision: Deny}); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			if len(lines) != tc.want || !strings.Contains(lines[len(lines)-1], `"host":"follower"`) {
				t.Errorf("file at the path holds %d lines ending %q, want %d ending with the follower's", len(lines), lines[len(lines)-1], tc.want)
			}
		})
	}
}

// TestLogCapCountsOtherWriters: the size cap counts what other writers appended to the same
// file, so two writers together still rotate at the cap.
func TestLogCapCountsOtherWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	a, _ := OpenLog(ctx, path, 1000)
	b, _ := OpenLog(ctx, path, 1000)
	defer a.Close()
	defer b.Close()
	line := Entry{Host: strings.Repeat("y", 200), Decision: Deny}
	for range 6 {
		a.Write(line)
		b.Write(line)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 1000 {
		t.Fatalf("log at the path is %d bytes (%v), want at most the cap of 1000", fi.Size(), err)
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Errorf("no rotated file: %v", err)
	}
}
