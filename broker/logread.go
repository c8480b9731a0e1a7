package broker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ReadLog reads a box's egress log at path: the rotated generation (path.1) and the current
// one, oldest first. Lines that are not one JSON entry are counted in bad, not fatal: the log is
// evidence, and a reader must not be stopped by it. A missing log reads as empty.
func ReadLog(path string) (entries []Entry, bad int, err error) {
	bad, err = ScanLog(path, func(line []byte) bool {
		var e Entry
		if json.Unmarshal(line, &e) != nil || e.Decision == "" {
			return false
		}
		entries = append(entries, e)
		return true
	})
	if err != nil {
		return nil, 0, err
	}
	return entries, bad, nil
}

// ScanLog calls each with every line of a box's egress log at path (path.1, then path), oldest
// first, and counts the lines each refuses in bad; a missing log reads as empty. For readers that
// keep what Entry does not name (git corral report).
func ScanLog(path string, each func(line []byte) bool) (bad int, err error) {
	for _, p := range []string{path + ".1", path} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read egress log: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if !each(sc.Bytes()) {
				bad++
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("read egress log %s: %w", p, err)
		}
	}
	return bad, nil
}
