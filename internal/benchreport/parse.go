package benchreport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Log is what one run of `make bench` recorded.
type Log struct {
	// Header holds the bench-header lines by key (date, commit, cpu, cores, memory, kernel,
	// command).
	Header map[string]string
	// Benches are the benchmarks in the order the log names them (started or skipped).
	Benches []*Bench
}

// Bench is one benchmark of the run: its figures, or why it has none.
type Bench struct {
	Name string
	// Skip is the reason it was not run ("" when it ran).
	Skip string
	// Start and End are the UTC times and /proc/loadavg's first three fields at its start and
	// end; Exit is its exit status (-1 while no bench-end line was read).
	StartTime, StartLoad, EndTime, EndLoad string
	Exit                                   int
	Rows                                   []Row
	Phases                                 []Phase
}

// Row is one figure beside its baseline, measured in the same run (bench/result.sh).
type Row struct {
	Label, Command       string
	Median               float64
	BaseLabel, BaseCmd   string
	BaseMedian           float64
	Unit, Runs           string
	Ratio                float64 // the script's own ratio, or Median / BaseMedian
	RatioGiven           bool    // whether the script gave Ratio (a median of per-round ratios)
	Target               string  // "" or conditions such as "ratio<=1.25,delta<=30"
	MedianText, BaseText string  // the medians as the script printed them
}

// Phase is one phase of a box's creation, from git corral's progress lines.
type Phase struct {
	Box, Name string
	Seconds   float64
}

var headerKeys = []string{"date", "commit", "cpu", "cores", "memory", "kernel", "command"}

// Parse reads a log of scripts/bench.sh. Lines that are not bench-* lines are the benchmarks'
// own output and are ignored; a malformed bench-* line is an error naming its line number.
func Parse(r io.Reader) (*Log, error) {
	l := &Log{Header: map[string]string{}}
	byName := map[string]*Bench{}
	get := func(name string) *Bench {
		if b, ok := byName[name]; ok {
			return b
		}
		b := &Bench{Name: name, Exit: -1}
		byName[name] = b
		l.Benches = append(l.Benches, b)
		return b
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var errs []error
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if !strings.HasPrefix(line, "bench-") {
			continue
		}
		f := strings.Split(line, "\t")
		if err := parseLine(l, get, f); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %s: %w", n, f[0], err))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	for _, k := range headerKeys {
		if l.Header[k] == "" {
			errs = append(errs, fmt.Errorf("no bench-header line for %q (scripts/bench.sh writes date, commit, cpu, cores, memory, kernel, command)", k))
		}
	}
	return l, errors.Join(errs...)
}

// fields is how many tab-separated fields each kind of line has, its name included.
var fields = map[string]int{"bench-header": 3, "bench-start": 4, "bench-row": 12, "bench-phase": 5, "bench-end": 5, "bench-skip": 3}

func parseLine(l *Log, get func(string) *Bench, f []string) error {
	want, ok := fields[f[0]]
	if !ok {
		return nil // a benchmark's own output that happens to start with "bench-"
	}
	if len(f) != want {
		return fmt.Errorf("want %d tab-separated fields, got %d", want, len(f))
	}
	switch f[0] {
	case "bench-header":
		l.Header[f[1]] = f[2]
	case "bench-start":
		b := get(f[1])
		b.StartTime, b.StartLoad = f[2], f[3]
	case "bench-end":
		b := get(f[1])
		code, err := strconv.Atoi(f[4])
		if err != nil {
			return fmt.Errorf("exit status %q is not a number", f[4])
		}
		b.EndTime, b.EndLoad, b.Exit = f[2], f[3], code
	case "bench-skip":
		get(f[1]).Skip = f[2]
	case "bench-phase":
		s, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			return fmt.Errorf("seconds %q is not a number", f[4])
		}
		b := get(f[1])
		b.Phases = append(b.Phases, Phase{Box: f[2], Name: f[3], Seconds: s})
	case "bench-row":
		row, err := parseRow(f[2:])
		if err != nil {
			return err
		}
		b := get(f[1])
		b.Rows = append(b.Rows, row)
	}
	return nil
}

func parseRow(f []string) (Row, error) {
	r := Row{Label: f[0], Command: f[1], MedianText: f[2], BaseLabel: f[3], BaseCmd: f[4], BaseText: f[5],
		Unit: f[6], Runs: f[7]}
	var err error
	if r.Median, err = strconv.ParseFloat(f[2], 64); err != nil {
		return r, fmt.Errorf("%s: median %q is not a number", f[0], f[2])
	}
	if r.BaseMedian, err = strconv.ParseFloat(f[5], 64); err != nil {
		return r, fmt.Errorf("%s: baseline median %q is not a number", f[0], f[5])
	}
	if f[8] != "-" {
		if r.Ratio, err = strconv.ParseFloat(f[8], 64); err != nil {
			return r, fmt.Errorf("%s: ratio %q is neither a number nor -", f[0], f[8])
		}
		r.RatioGiven = true
	} else if r.BaseMedian != 0 {
		r.Ratio = r.Median / r.BaseMedian
	}
	if f[9] != "-" {
		r.Target = f[9]
		if _, err := r.Met(); err != nil {
			return r, fmt.Errorf("%s: %w", f[0], err)
		}
	}
	return r, nil
}

// Met reports whether the row meets every condition of its target: ratio<=X, ratio>=X,
// delta<=X (Median - BaseMedian, in Unit) or median<=X (in Unit), comma-separated.
func (r Row) Met() (bool, error) {
	met := true
	for _, c := range strings.Split(r.Target, ",") {
		name, op, v, err := splitCond(c)
		if err != nil {
			return false, err
		}
		var x float64
		switch name {
		case "ratio":
			x = r.Ratio
		case "delta":
			x = r.Median - r.BaseMedian
		case "median":
			x = r.Median
		default:
			return false, fmt.Errorf("target %q: %q is not ratio, delta or median", r.Target, name)
		}
		if (op == "<=" && x > v) || (op == ">=" && x < v) {
			met = false
		}
	}
	return met, nil
}

func splitCond(c string) (name, op string, v float64, err error) {
	for _, op = range []string{"<=", ">="} {
		if i := strings.Index(c, op); i > 0 {
			v, err = strconv.ParseFloat(c[i+2:], 64)
			if err != nil {
				return "", "", 0, fmt.Errorf("target condition %q: %q is not a number", c, c[i+2:])
			}
			return c[:i], op, v, nil
		}
	}
	return "", "", 0, fmt.Errorf("target condition %q: want NAME<=NUMBER or NAME>=NUMBER", c)
}
