package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Filter selects records when reading.
type Filter struct {
	// Box keeps only this box's records when not empty.
	Box string
	// Last keeps only the last N matching records when > 0.
	Last int
}

// ReadResult is what Read found.
type ReadResult struct {
	Records []Record
	// Bad counts lines that are not valid records (they are reported, never silently dropped).
	Bad int
	// PartialTail is true when the log ends in an unterminated fragment, which the next append
	// removes.
	PartialTail bool
}

// Read returns the records of the log at path (and its rotated generation, oldest first) that
// match f. A missing log reads as empty.
func Read(path string, f Filter) (ReadResult, error) {
	var res ReadResult
	for _, p := range []string{path + ".1", path} {
		if err := readFile(p, f, &res); err != nil {
			return res, err
		}
	}
	if f.Last > 0 && len(res.Records) > f.Last {
		res.Records = res.Records[len(res.Records)-f.Last:]
	}
	return res, nil
}

func readFile(path string, f Filter, res *ReadResult) error {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: read %s: %w", path, err)
	}
	defer fh.Close()
	return scan(fh, f, res)
}

func scan(r io.Reader, f Filter, res *ReadResult) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			// An unterminated last line is a killed writer's fragment (see log.go), or a
			// line being written right now: never a record.
			if len(line) > 0 {
				res.PartialTail = true
			}
			return nil
		}
		if err != nil {
			return err
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil || rec.Event == "" {
			res.Bad++
			continue
		}
		if f.Box != "" && rec.Box != f.Box {
			continue
		}
		res.Records = append(res.Records, rec)
	}
}
