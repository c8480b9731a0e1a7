package diff

import (
	"fmt"
	"io"
	"strings"

	"github.com/git-corral/git-corral/internal/visible"
)

// TextOptions tunes WriteText.
type TextOptions struct {
	// All lists every ordinary change with its diff instead of the first maxBrief names.
	All bool
	// Color marks severities with ANSI colour (only for a terminal).
	Color bool
}

// maxBrief is how many ordinary changes the text output names without --all.
const maxBrief = 100

// WriteText prints r for a human: host-executed findings first, grouped, each with its severity
// and one-line reason and its detail; then the ordinary changes in brief. Every string that
// came from the work tree goes through visible, so the terminal never receives a raw control,
// bidi or escape character.
func WriteText(w io.Writer, r *Report, o TextOptions) error {
	bw := &errWriter{w: w}
	b := r.Base
	switch b.Kind {
	case "session":
		bw.printf("compared with session base %s (%s)\n", visible.String(b.Path), b.Created.UTC().Format("2006-01-02 15:04:05 UTC"))
	default:
		bw.printf("compared with %s (commit %.12s)\n", visible.String(b.Ref), b.Commit)
	}
	if !b.GitMetaCompared {
		bw.printf("note: no session base recorded, so git metadata (.git/config, hooks) was not compared\n")
	}
	if len(r.Findings) == 0 {
		bw.printf("\nno changes to host-executed files\n")
	} else {
		bw.printf("\nHOST-EXECUTED CHANGES: %d finding(s)\n", len(r.Findings))
		writeFindings(bw, r.Findings, o)
	}
	writeOrdinary(bw, r.Changes, o.All)
	return bw.err
}

// maxPerGroup is how many findings of one severity and group the text output shows without
// --all (an npm install in the box adds thousands of package.json files); the count of the rest
// is always printed, and --json lists them all.
const maxPerGroup = 50

func writeFindings(bw *errWriter, fs []Finding, o TextOptions) {
	group, sev, n := "", Severity(""), 0
	hinted := map[string]bool{}
	defer func() {
		if len(hinted) > 0 {
			bw.printf("\n(%s)\n", SandboxManifestNote)
		}
	}()
	for i, f := range fs {
		if f.Severity != sev || f.Group != group {
			sev, group, n = f.Severity, f.Group, 0
			bw.printf("\n%s [%s]\n", severityLabel(sev, o.Color), group)
		}
		if n++; n > maxPerGroup && !o.All {
			if n == maxPerGroup+1 {
				rest := 0
				for _, g := range fs[i:] {
					if g.Severity == sev && g.Group == group {
						rest++
					}
				}
				bw.printf("  … %d more %s [%s] findings (git corral diff --all shows them)\n", rest, strings.ToUpper(string(sev)), group)
			}
			continue
		}
		bw.printf("  %-11s %s\n", f.Status, visible.String(f.Path))
		bw.printf("      %s\n", visible.String(f.Reason))
		if h := SandboxHint(f); h != "" && !hinted[f.Path] {
			hinted[f.Path] = true
			bw.printf("      try it fenced first: %s\n", visible.String(h))
		}
		for _, l := range f.Detail {
			bw.printf("      | %s\n", detailLine(l))
		}
	}
}

func severityLabel(s Severity, color bool) string {
	label := strings.ToUpper(string(s))
	if !color {
		return label
	}
	code := map[Severity]string{High: "1;31", Medium: "1;33", Low: "1;36"}[s]
	return "\x1b[" + code + "m" + label + "\x1b[0m"
}

// detailLine escapes one detail line, keeping tabs (makefile recipes) readable.
func detailLine(l string) string {
	return strings.ReplaceAll(visible.Lines(l), "\n", `\n`)
}

func writeOrdinary(bw *errWriter, cs []Change, all bool) {
	var rest []Change
	for _, c := range cs {
		if !c.Finding {
			rest = append(rest, c)
		}
	}
	if len(rest) == 0 {
		return
	}
	bw.printf("\nOTHER CHANGES: %d\n", len(rest))
	for i, c := range rest {
		if !all && i == maxBrief {
			bw.printf("  … %d more (git corral diff --all lists them)\n", len(rest)-maxBrief)
			break
		}
		bw.printf("  %-11s %s\n", c.Status, visible.String(c.Path))
		if all {
			for _, l := range c.Detail {
				bw.printf("      | %s\n", detailLine(l))
			}
		}
	}
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// Escaped returns a copy of r whose strings from the work tree (paths, targets, details) are
// escaped with visible.String, for JSON that may end up on a terminal: encoding/json leaves bidi
// and zero-width characters raw.
func (r *Report) Escaped() *Report {
	out := *r
	out.Base.Ref = visible.String(r.Base.Ref)
	out.Base.Path = visible.String(r.Base.Path)
	out.Findings = make([]Finding, len(r.Findings))
	for i, f := range r.Findings {
		f.Path, f.Reason, f.Detail = visible.String(f.Path), visible.String(f.Reason), escapeAll(f.Detail)
		out.Findings[i] = f
	}
	out.Changes = make([]Change, len(r.Changes))
	for i, c := range r.Changes {
		c.Path, c.Target, c.Error, c.Detail = visible.String(c.Path), visible.String(c.Target), visible.String(c.Error), escapeAll(c.Detail)
		out.Changes[i] = c
	}
	if out.Findings == nil {
		out.Findings = []Finding{}
	}
	if out.Changes == nil {
		out.Changes = []Change{}
	}
	return &out
}

func escapeAll(ls []string) []string {
	if ls == nil {
		return []string{}
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = visible.String(l)
	}
	return out
}
