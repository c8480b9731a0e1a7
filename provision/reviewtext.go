package provision

// This file prints a review for a person. Rules: every byte that came from the repository
// (paths, script lines, diff lines, flags naming files) goes through internal/visible, so
// control characters, terminal escapes, bidi overrides and zero-width characters show as
// escapes; long lines are wrapped at WrapWidth with a marker, so nothing hides past the edge of
// the terminal.

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/git-corral/git-corral/internal/visible"
)

// WrapWidth is the column at which review wraps script lines.
const WrapWidth = 100

// maxDiffCells bounds the line diff's table; larger changes are shown as all-removed then
// all-added.
const maxDiffCells = 4 << 20

// lineDiff returns a full line diff of a and b ("-", "+", " " prefixes), or "" when equal.
func lineDiff(a, b string) string {
	if a == b {
		return ""
	}
	x, y := splitLines(a), splitLines(b)
	var out strings.Builder
	if len(x)*len(y) > maxDiffCells {
		for _, l := range x {
			out.WriteString("-" + l + "\n")
		}
		for _, l := range y {
			out.WriteString("+" + l + "\n")
		}
		return out.String()
	}
	// lcs[i][j] is the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString(" " + x[i] + "\n")
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("-" + x[i] + "\n")
			i++
		default:
			out.WriteString("+" + y[j] + "\n")
			j++
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// wrapLine escapes one line and cuts it into pieces of at most width runes.
func wrapLine(line string, width int) []string {
	esc := visible.String(line)
	if esc == "" {
		return []string{""}
	}
	var out []string
	for utf8.RuneCountInString(esc) > width {
		cut := 0
		for n := 0; n < width; n++ {
			_, size := utf8.DecodeRuneInString(esc[cut:])
			cut += size
		}
		out = append(out, esc[:cut])
		esc = esc[cut:]
	}
	return append(out, esc)
}

// FormatReview prints r for a person: per script its path, who it runs as, hash, the
// directories and files its approval covers, what changed, state, flags and problems, then its content with line numbers, or for a changed script the
// diff since approval; then the packages.
func FormatReview(w io.Writer, r *ReviewReport) {
	fmt.Fprintf(w, "box %s (network %s)\n", visible.String(r.Box), visible.String(r.Network))
	if len(r.Scripts) == 0 {
		fmt.Fprintln(w, "no provision scripts")
	}
	for _, s := range r.Scripts {
		formatScript(w, s)
	}
	if len(r.Packages) == 0 {
		fmt.Fprintln(w, "\nno packages")
		return
	}
	fmt.Fprintln(w, "\npackages:")
	for _, p := range r.Packages {
		fmt.Fprintf(w, "  %-9s %s\n", p.State, visible.String(p.Name))
	}
}

func formatScript(w io.Writer, s ScriptReview) {
	fmt.Fprintf(w, "\nprovision script %s\n", visible.String(s.Path))
	runs := s.RunsAs
	if s.SystemMarker && s.RunsAs != "root" {
		runs += " (the system marker counts only in network mode full)"
	}
	fmt.Fprintf(w, "  state:   %s\n  runs as: %s\n", s.State, runs)
	if s.SHA256 != "" {
		fmt.Fprintf(w, "  sha256:  %s (script and every file it pulls in)\n", s.SHA256)
	}
	for _, d := range s.Directories {
		fmt.Fprintf(w, "  covers:  every file under %s\n", visible.String(dirLabel(d)))
	}
	for _, src := range s.Sources {
		fmt.Fprintf(w, "  sources: %s (%s)\n", visible.String(src.Path), src.SHA256)
	}
	for _, c := range s.Changed {
		fmt.Fprintf(w, "  changed: %s\n", visible.String(c))
	}
	for _, f := range s.Flags {
		fmt.Fprintf(w, "  flag:    %s\n", visible.String(f))
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "  refused: %s\n", visible.String(p))
	}
	switch {
	case s.State == StateChanged:
		fmt.Fprintln(w, "  changes since approval:")
		for _, line := range splitLines(s.Diff) {
			printWrapped(w, "    ", line)
		}
	case s.State != StateRefused:
		for i, line := range splitLines(s.Content) {
			printWrapped(w, fmt.Sprintf("  %4d | ", i+1), line)
		}
	}
}

func printWrapped(w io.Writer, prefix, line string) {
	pad := strings.Repeat(" ", utf8.RuneCountInString(prefix)-2) + "↪ "
	for i, piece := range wrapLine(line, WrapWidth) {
		if i == 0 {
			fmt.Fprintf(w, "%s%s\n", prefix, piece)
		} else {
			fmt.Fprintf(w, "%s%s\n", pad, piece)
		}
	}
}
