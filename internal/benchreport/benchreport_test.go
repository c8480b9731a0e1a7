package benchreport

import (
	"strings"
	"testing"
)

// TestUnbacked is the README check's control: a figure in the section passes, one outside it
// fails, and a listed setting passes.
func TestUnbacked(t *testing.T) {
	section := "| warm | `git corral run -- true` | ssh | 180 ms | 120 ms | 1.50× (+60.0 ms) |"
	readme := "A command on a warm box takes 180 ms, 1.50× plain ssh; a box boots in 13.2 s, or 0.3x; FUZZTIME (default 20s)."
	got := Unbacked(readme, section)
	if strings.Join(got, ",") != "13.2 s,0.3x" {
		t.Errorf("Unbacked = %q, want the two figures the section lacks [13.2 s 0.3x]", got)
	}
	if got := TimingFigures("x86_64, 2 cores, 24 GiB, issue #30, v1.2.2, sha256"); len(got) != 0 {
		t.Errorf("TimingFigures of text with no timing figure = %q, want none", got)
	}
}

const sample = "bench-header\tdate\t2026-12-05T16:30:10Z\n" +
	"bench-header\tcommit\te8d2ec7c6b69\n" +
	"bench-header\tcpu\tAMD EPYC\n" +
	"bench-header\tcores\t2\n" +
	"bench-header\tmemory\t24 GiB\n" +
	"bench-header\tkernel\t6.1.0\n" +
	"bench-header\tcommand\tscripts/bench.sh --no-box\n" +
	"bench-start\tsandbox\t16:30:11Z\t8.58 5.16 3.02\n" +
	"some hyperfine output | with a pipe\n" +
	"bench-row\tsandbox\tgit corral sandbox -- true\t/tmp/gc sandbox -- true\t54.3\tbare bubblewrap\tbwrap true\t33.8\tms\t40\t-\tdelta<=30\n" +
	"bench-end\tsandbox\t16:31:00Z\t9.30 6.00 3.50\t0\n" +
	"bench-start\twarm\t16:31:00Z\t9.30 6.00 3.50\n" +
	"bench-row\twarm\tgit corral run -- true\tgc run -- true\t190\tssh -F ssh.config true\tssh true\t150\tms\t15 rounds\t1.22\tratio<=1.25\n" +
	"bench-end\twarm\t16:35:00Z\t4.00 5.00 3.00\t0\n" +
	"bench-start\tgolden\t16:35:00Z\t4.00 5.00 3.00\n" +
	"bench-phase\tgolden\tfrom scratch\tboot\t40.0\n" +
	"bench-phase\tgolden\tfrom scratch\tboot\t2.5\n" +
	"bench-end\tgolden\t16:40:00Z\t4.00 5.00 3.00\t1\n" +
	"bench-skip\tclone-box\t--no-box: it boots boxes\n"

// TestRender checks the rendered section against the sample log: the figures beside their
// baselines, the targets met and not met, the phases summed, the load, and every benchmark
// without figures named with why.
func TestRender(t *testing.T) {
	l, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	out := Render(l, "bench/results/bench-20261205T1630Z.log")
	for _, want := range []string{
		"| sandbox | git corral sandbox -- true | bare bubblewrap | 54.3 ms | 33.8 ms | 1.61× (+20.5 ms) | ≤ baseline + 30 ms: met | 40 | 8.58 → 9.30 |",
		"| warm | git corral run -- true | ssh -F ssh.config true | 190 ms | 150 ms | 1.22× (+40 ms; median of the rounds' ratios) | ≤ 1.25×: met | 15 rounds | 9.30 → 4.00 |",
		"| golden | from scratch | boot | 42.5 |",
		"| golden | **failed** (exit 1); its output is in the log |",
		"| clone-box | not run: --no-box: it boots boxes |",
		"| machine | AMD EPYC; 2 cores; 24 GiB; kernel 6.1.0 |",
		"[bench/results/bench-20261205T1630Z.log](../bench/results/bench-20261205T1630Z.log)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered section lacks\n%s\nin:\n%s", want, out)
		}
	}
	if got := ratio(Row{Median: 323, BaseMedian: 98112, Ratio: 323.0 / 98112, MedianText: "323", BaseText: "98112", Unit: "ms"}); got != "0.0033× (-97789 ms)" {
		t.Errorf("ratio of a figure 300 times below its baseline = %q, want 0.0033× (-97789 ms)", got)
	}
	if got := ratio(Row{Median: 1.050, BaseMedian: 0.177, Ratio: 1.050 / 0.177, MedianText: "1.050", BaseText: "0.177", Unit: "ms"}); got != "5.93× (+0.873 ms)" {
		t.Errorf("ratio of 1.050 ms to 0.177 ms = %q, want the difference to the medians' 3 decimals: 5.93× (+0.873 ms)", got)
	}
	// Not met: the same row 40 ms over bubblewrap.
	r := l.Benches[0].Rows[0]
	r.Median = 73.8
	if met, err := r.Met(); err != nil || met {
		t.Errorf("Met() of sandbox 40 ms over bubblewrap with target delta<=30 = %v, %v; want false", met, err)
	}
}

// TestParseErrors: a malformed result line or a missing header is an error naming the line or
// the key, not a row quietly dropped from the docs.
func TestParseErrors(t *testing.T) {
	for name, c := range map[string]struct{ log, want string }{
		"short row":   {sample + "bench-row\tsandbox\tx\t1\n", "want 12 tab-separated fields, got 4"},
		"bad median":  {sample + "bench-row\tsandbox\tx\tc\tfast\tb\tc\t1\tms\t1\t-\t-\n", `median "fast" is not a number`},
		"bad target":  {sample + "bench-row\tsandbox\tx\tc\t1\tb\tc\t1\tms\t1\t-\tspeed<=3\n", `"speed" is not ratio, delta or median`},
		"no header":   {strings.Replace(sample, "bench-header\tkernel\t6.1.0\n", "", 1), `no bench-header line for "kernel"`},
		"bad exit":    {sample + "bench-end\tsandbox\tT\tL\tok\n", `exit status "ok" is not a number`},
		"line number": {sample + "bench-row\tsandbox\tx\n", "line 20: bench-row"},
	} {
		_, err := Parse(strings.NewReader(c.log))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse error = %v, want one containing %q", name, err, c.want)
		}
	}
	if _, err := Parse(strings.NewReader(sample)); err != nil {
		t.Errorf("control: Parse of the well-formed sample = %v", err)
	}
}

// TestSplice: the section is replaced in place, the text around it kept, and a doc with no
// markers or two is refused.
func TestSplice(t *testing.T) {
	doc := "# Benchmarks\n\nintro\n\n" + BeginMarker + "\nold bench/results/bench-20260101T0000Z.log\n" + EndMarker + "\n\n## after\n"
	got, err := Splice(doc, BeginMarker+"\nnew\n"+EndMarker+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Benchmarks\n\nintro\n\n" + BeginMarker + "\nnew\n" + EndMarker + "\n\n## after\n"; got != want {
		t.Errorf("Splice = %q, want %q", got, want)
	}
	if _, p, err := Section(doc); err != nil || p != "bench/results/bench-20260101T0000Z.log" {
		t.Errorf("Section log = %q, %v", p, err)
	}
	for _, bad := range []string{"no markers", doc + doc} {
		if _, err := Splice(bad, "x"); err == nil {
			t.Errorf("Splice of a doc with %d begin markers: no error", strings.Count(bad, BeginMarker))
		}
	}
}
