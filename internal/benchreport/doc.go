// Package benchreport turns the log of `make bench` (scripts/bench.sh) into the generated
// section of docs/BENCHMARKS.md, and checks that the figures the docs quote come from it.
//
// Owns: the grammar of the log's machine-readable lines (bench/result.sh writes the bench-row
// and bench-phase lines, scripts/bench.sh the others), the rendering of the section between
// BeginMarker and EndMarker, and the list of timing figures README.md may quote.
// Does not own: running anything. The benchmarks are shell scripts under bench/; this package
// only reads what they printed.
//
// Rules:
//   - The section is a pure function of one log: Render(Parse(log)) is byte-for-byte what the
//     doc holds, so a hand edit, or a log changed after the doc was written, fails a test.
//   - A benchmark is in the section as figures, as failed (its exit status), or as not run
//     with the reason scripts/bench.sh gave; never left out silently.
//   - Every figure stands beside its baseline from the same run, with the load average at the
//     start and end of that benchmark, and the machine and commit of the run on top.
//
// The log's lines (tab-separated; any other line is a benchmark's own output, kept as raw):
//
//	bench-header KEY VALUE                        date, commit, cpu, cores, memory, kernel, command
//	bench-start  BENCH TIME LOAD                  LOAD is /proc/loadavg's first three fields
//	bench-row    BENCH LABEL COMMAND MEDIAN BASE_LABEL BASE_COMMAND BASE_MEDIAN UNIT RUNS RATIO TARGET
//	bench-phase  BENCH BOX PHASE SECONDS
//	bench-end    BENCH TIME LOAD EXIT
//	bench-skip   BENCH REASON
package benchreport
