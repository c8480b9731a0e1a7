package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// checkWholeLines fails when any line of the file is not one complete JSON record.
func checkWholeLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("%s ends in a partial line: %q", path, tail(data))
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Event == "" {
			t.Fatalf("line %d of %s is not a whole record: %q (%v)", n+1, path, sc.Text(), err)
		}
		n++
	}
	return n
}

func tail(b []byte) []byte {
	if len(b) > 80 {
		return b[len(b)-80:]
	}
	return b
}

func TestAppendConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "sessions.jsonl")
	l := &Log{Path: path}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				argv := []string{"worker", strconv.Itoa(w), strings.Repeat("x", 3000)}
				if err := l.Append(context.Background(), Record{Event: EventLaunch, Box: "b", Argv: argv}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	if n := checkWholeLines(t, path); n != 400 {
		t.Errorf("%d records, want 400", n)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600 (names of variables and argv are private)", fi.Mode().Perm())
	}
}

// TestAppendSurvivesKilledWriters runs writer processes that append large records (many pages
// each, so SIGKILL often lands inside a write(2)) as fast as they can and kills them mid-stream,
// in rounds: after every round readers see only whole records, and the next writer repairs the
// tail. It reports how many rounds left a fragment behind; TestAppendRepairsFragment covers the
// repair deterministically.
func TestAppendSurvivesKilledWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	fragments := 0
	for round := 0; round < 12 && (round < 4 || fragments == 0); round++ {
		killWriters(t, path, 4)
		if data, _ := os.ReadFile(path); len(data) > 0 && data[len(data)-1] != '\n' {
			fragments++
		}
		// Readers see only whole records, whatever the kill left at the tail or in the middle.
		res, err := Read(path, Filter{})
		if err != nil || res.Bad != 0 {
			t.Fatalf("round %d: read after kill: %d bad lines, %v", round, res.Bad, err)
		}
		// The next writer repairs the tail before appending.
		l := &Log{Path: path, MaxBytes: 1 << 40}
		if err := l.Append(context.Background(), Record{Event: EventStop, Box: "after-kill"}); err != nil {
			t.Fatal(err)
		}
		if n := checkWholeLines(t, path); n < 10 {
			t.Fatalf("only %d records written; the test did not exercise concurrent writers", n)
		}
	}
	t.Logf("%d kill rounds left a partial line at the tail", fragments)
}

// killWriters starts n writer processes on path, lets them write about 4 MiB, and kills them.
func killWriters(t *testing.T, path string, n int) {
	t.Helper()
	var start int64
	if fi, err := os.Stat(path); err == nil {
		start = fi.Size()
	}
	var procs []*exec.Cmd
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "AUDIT_HELPER_LOG="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		fi, err := os.Stat(path)
		if err == nil && fi.Size()-start > 4<<20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, p := range procs {
		p.Process.Signal(syscall.SIGKILL)
	}
	for _, p := range procs {
		p.Wait()
	}
}

// TestMain runs the package's tests, or, with AUDIT_HELPER_LOG set, is the writer process of
// TestAppendSurvivesKilledWriters: it appends until it is killed. (A helper that is a test of
// its own would count as a skipped test in every ordinary run.)
func TestMain(m *testing.M) {
	if path := os.Getenv("AUDIT_HELPER_LOG"); path != "" {
		l := &Log{Path: path, MaxBytes: 1 << 40}
		for i := 0; ; i++ {
			l.Append(context.Background(), Record{Event: EventExit, Box: "b", Detail: strings.Repeat(strconv.Itoa(i%10), 256<<10)})
		}
	}
	os.Exit(m.Run())
}

// TestAppendRepairsFragment leaves what a writer killed inside write(2) leaves, the start of a
// line with no newline, then appends from several goroutines at once: exactly one of them cuts
// the fragment off under the lock, and every line is a whole record.
func TestAppendRepairsFragment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	l := &Log{Path: path, MaxBytes: 1 << 30}
	if err := l.Append(context.Background(), Record{Event: EventStart, Box: "before"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-01-01T00:00:00Z","event":"exit","detail":"cut off by SIGK`)
	f.Close()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := l.Append(context.Background(), Record{Event: EventLaunch, Box: "after", Detail: strings.Repeat("z", 5000)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n := checkWholeLines(t, path); n != 161 {
		t.Errorf("%d records, want 161 (the fragment cut, nothing else lost)", n)
	}
}

func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	l := &Log{Path: path, MaxBytes: 4096}
	for i := 0; i < 100; i++ {
		if err := l.Append(context.Background(), Record{Event: EventStart, Box: fmt.Sprint("box", i)}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 4096 {
		t.Fatalf("log not rotated: %v, %v", fi, err)
	}
	checkWholeLines(t, path)
	checkWholeLines(t, path+".1")
	res, err := Read(path, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if last := res.Records[len(res.Records)-1].Box; last != "box99" {
		t.Errorf("last record %q, want box99", last)
	}
}

// TestFullDiskLeavesNoPartialLine fills a small tmpfs: Append must fail with a clear error and
// the file must hold only whole lines.
func TestFullDiskLeavesNoPartialLine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs as a full disk; CI runs as root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	l := &Log{Path: filepath.Join(dir, "sessions.jsonl"), MaxBytes: 1 << 30}
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		err = l.Append(context.Background(), Record{Event: EventLaunch, Detail: strings.Repeat("y", 1500)})
	}
	if err == nil {
		t.Fatal("appending 1.5 MB to a 64 KiB file system never failed")
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "sessions.jsonl") {
		t.Errorf("error %q should name the file and wrap ENOSPC", err)
	}
	checkWholeLines(t, l.Path)
}

func TestReadFilterAndBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	l := &Log{Path: path}
	for _, b := range []string{"a", "b", "a", "a"} {
		if err := l.Append(context.Background(), Record{Event: EventStart, Box: b}); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n")
	f.Close()
	res, err := Read(path, Filter{Box: "a", Last: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 2 || res.Bad != 1 {
		t.Errorf("got %d records, %d bad; want 2 and 1", len(res.Records), res.Bad)
	}
}
