package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// LogContents is what ReadLog found in the sandbox log: the runs and the broker's decisions
// (D: broker.Entry, which package sandbox does not link, sandbox.Broker), in file order, and
// how many lines were neither (reported, never silently dropped).
type LogContents[D any] struct {
	Runs      []Record
	Decisions []D
	Bad       int
}

// maxLogLine bounds one line of the log when reading it back.
const maxLogLine = 1 << 20

// ReadLog reads the sandbox log at path (a missing file is an empty log). It is what
// 'git corral audit' and 'git corral egress' call to render the light tier's lines.
func ReadLog[D any](path string) (*LogContents[D], error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &LogContents[D]{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read sandbox log: %w", err)
	}
	defer f.Close()
	c := &LogContents[D]{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	for sc.Scan() {
		var kind struct {
			Event    string `json:"event"`
			Decision string `json:"decision"`
		}
		line := sc.Bytes()
		if json.Unmarshal(line, &kind) != nil {
			c.Bad++
			continue
		}
		switch {
		case kind.Event == EventRun:
			var r Record
			if json.Unmarshal(line, &r) != nil {
				c.Bad++
				continue
			}
			c.Runs = append(c.Runs, r)
		case kind.Decision != "":
			var e D
			if json.Unmarshal(line, &e) != nil {
				c.Bad++
				continue
			}
			c.Decisions = append(c.Decisions, e)
		default:
			c.Bad++
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("read sandbox log %s: %w", path, err)
	}
	return c, nil
}
