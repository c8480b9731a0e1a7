package benchreport

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// BeginMarker and EndMarker enclose the generated section of docs/BENCHMARKS.md.
const (
	BeginMarker = "<!-- bench:begin -->"
	EndMarker   = "<!-- bench:end -->"
)

// Render is the generated section, markers included, for the log at logPath (a path relative to
// the repository's root, such as bench/results/bench-20261205T1700Z.log); docs/BENCHMARKS.md
// links it from docs/.
func Render(l *Log, logPath string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("%s\n", BeginMarker)
	w("<!-- Written by `make bench` (scripts/bench.sh, internal/benchreport) from %s; do not edit by hand. -->\n\n", logPath)
	w("All from one run of `make bench` (the command below), whose whole output is\n[%s](../%s): every figure beside its baseline measured in the\n", logPath, logPath)
	w("same run, with the 1-minute load average at the start and end of its benchmark.\n\n")
	w("| run | |\n|---|---|\n")
	w("| date | %s |\n", cell(l.Header["date"]))
	w("| commit | `%s` |\n", cell(l.Header["commit"]))
	w("| machine | %s; %s cores; %s; kernel %s |\n", cell(l.Header["cpu"]), cell(l.Header["cores"]),
		cell(l.Header["memory"]), cell(l.Header["kernel"]))
	w("| command | `%s` |\n\n", cell(l.Header["command"]))
	renderRows(&b, l)
	renderPhases(&b, l)
	renderMissing(&b, l)
	w("%s\n", EndMarker)
	return b.String()
}

func renderRows(b *strings.Builder, l *Log) {
	fmt.Fprintf(b, "| benchmark | command | baseline | median | baseline median | ratio | target | runs | load at start → end |\n")
	fmt.Fprintf(b, "|---|---|---|---:|---:|---:|---|---|---|\n")
	for _, bench := range l.Benches {
		for _, r := range bench.Rows {
			fmt.Fprintf(b, "| %s | %s | %s | %s %s | %s %s | %s | %s | %s | %s → %s |\n", bench.Name, cell(r.Label),
				cell(r.BaseLabel), r.MedianText, r.Unit, r.BaseText, r.Unit, ratio(r), target(r), cell(r.Runs),
				load1(bench.StartLoad), load1(bench.EndLoad))
		}
	}
	b.WriteString("\n")
}

func ratio(r Row) string {
	var notes []string
	if r.Unit == "ms" || r.Unit == "s" || r.Unit == "MiB" {
		// The difference to as many decimals as the more precise of the two medians.
		d := max(decimals(r.MedianText), decimals(r.BaseText))
		notes = append(notes, fmt.Sprintf("%+.*f %s", d, r.Median-r.BaseMedian, r.Unit))
	}
	if r.RatioGiven {
		notes = append(notes, "median of the rounds' ratios")
	}
	s := strconv.FormatFloat(r.Ratio, 'f', 2, 64) + "×"
	if r.Ratio != 0 && r.Ratio < 0.01 {
		s = strconv.FormatFloat(r.Ratio, 'g', 2, 64) + "×" // 0.0033×, not 0.00×
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s
}

// decimals is how many digits a number as printed has after its point.
func decimals(num string) int {
	if i := strings.IndexByte(num, '.'); i >= 0 {
		return len(num) - i - 1
	}
	return 0
}

func target(r Row) string {
	if r.Target == "" {
		return ""
	}
	var parts []string
	for _, c := range strings.Split(r.Target, ",") {
		name, op, v, _ := splitCond(c)
		sym := map[string]string{"<=": "≤", ">=": "≥"}[op]
		num := strconv.FormatFloat(v, 'f', -1, 64)
		switch name {
		case "ratio":
			parts = append(parts, sym+" "+num+"×")
		case "delta":
			parts = append(parts, sym+" baseline + "+num+" "+r.Unit)
		case "median":
			parts = append(parts, sym+" "+num+" "+r.Unit)
		}
	}
	if met, _ := r.Met(); met {
		return strings.Join(parts, " and ") + ": met"
	}
	return strings.Join(parts, " and ") + ": **not met**"
}

func renderPhases(b *strings.Builder, l *Log) {
	any := false
	for _, bench := range l.Benches {
		if len(bench.Phases) == 0 {
			continue
		}
		if !any {
			b.WriteString("Where each box's time went, from git corral's own progress lines (seconds; a phase seen\ntwice is summed):\n\n")
			b.WriteString("| benchmark | box | phase | seconds |\n|---|---|---|---:|\n")
			any = true
		}
		type key struct{ box, name string }
		sum := map[key]float64{}
		var order []key
		for _, p := range bench.Phases {
			k := key{p.Box, p.Name}
			if _, ok := sum[k]; !ok {
				order = append(order, k)
			}
			sum[k] += p.Seconds
		}
		for _, k := range order {
			fmt.Fprintf(b, "| %s | %s | %s | %.1f |\n", bench.Name, cell(k.box), cell(k.name), sum[k])
		}
	}
	if any {
		b.WriteString("\n")
	}
}

// renderMissing lists every benchmark of the run without figures: not run (and why), failed,
// or ended without a result line. None is left out silently.
func renderMissing(b *strings.Builder, l *Log) {
	var lines []string
	for _, bench := range l.Benches {
		var why string
		switch {
		case bench.Skip != "":
			why = "not run: " + bench.Skip
		case bench.Exit == -1:
			why = "started but never ended (the run was cut short)"
		case bench.Exit != 0:
			why = fmt.Sprintf("**failed** (exit %d); its output is in the log", bench.Exit)
		case len(bench.Rows) == 0:
			why = "ran, but printed no result line"
		default:
			continue
		}
		lines = append(lines, fmt.Sprintf("| %s | %s |\n", bench.Name, cell(why)))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("Without figures in this run:\n\n| benchmark | why |\n|---|---|\n")
	for _, s := range lines {
		b.WriteString(s)
	}
	b.WriteString("\n")
}

func load1(load string) string {
	if f := strings.Fields(load); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

var logRef = regexp.MustCompile(`bench/results/bench-[0-9]{8}T[0-9]{4,6}Z\.log`)

// Section returns the generated section of doc, markers included, and the log it names.
func Section(doc string) (section, logPath string, err error) {
	i, j, err := bounds(doc)
	if err != nil {
		return "", "", err
	}
	section = doc[i:j]
	logPath = logRef.FindString(section)
	if logPath == "" {
		return section, "", fmt.Errorf("the section between %s and %s names no bench/results/bench-*.log", BeginMarker, EndMarker)
	}
	return section, logPath, nil
}

// Splice replaces the generated section of doc with section.
func Splice(doc, section string) (string, error) {
	i, j, err := bounds(doc)
	if err != nil {
		return "", err
	}
	return doc[:i] + section + doc[j:], nil
}

// bounds is where the section starts (at BeginMarker) and ends (after EndMarker's line).
func bounds(doc string) (int, int, error) {
	if strings.Count(doc, BeginMarker) != 1 || strings.Count(doc, EndMarker) != 1 {
		return 0, 0, fmt.Errorf("want exactly one %s and one %s line, found %d and %d (add them where the generated section goes)",
			BeginMarker, EndMarker, strings.Count(doc, BeginMarker), strings.Count(doc, EndMarker))
	}
	i, j := strings.Index(doc, BeginMarker), strings.Index(doc, EndMarker)+len(EndMarker)
	if j < i {
		return 0, 0, fmt.Errorf("%s comes before %s", EndMarker, BeginMarker)
	}
	if j < len(doc) && doc[j] == '\n' {
		j++
	}
	return i, j, nil
}
