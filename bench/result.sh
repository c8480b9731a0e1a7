# bench/result.sh — the one machine-readable result line every bench script prints, so that
# `make bench` (scripts/bench.sh) can put its log into docs/BENCHMARKS.md without reading
# each script's own prose. Sourced; defines bench_row. A row is a figure beside its baseline,
# measured in the same run: one tab-separated line
#
#   bench-row BENCH LABEL COMMAND MEDIAN BASE_LABEL BASE_COMMAND BASE_MEDIAN UNIT RUNS RATIO TARGET
#
#   BENCH       the benchmark's name in scripts/bench.sh --list (sandbox, warm, golden, ...)
#   LABEL       what was measured, as a reader knows it (`git corral sandbox -- true`)
#   COMMAND     the command line that was timed ("-" when it is a step inside a process)
#   MEDIAN      its median, a plain number in UNIT
#   BASE_*      the same for the baseline it is read against
#   UNIT        ms, s, MiB/s or MiB
#   RUNS        how many runs each median is of (e.g. 40, or 20/3 when they differ)
#   RATIO       the figure when it is not MEDIAN / BASE_MEDIAN (a median of per-round ratios);
#               "-" lets the report compute MEDIAN / BASE_MEDIAN
#   TARGET      "-" or the goal, comma-separated: ratio<=1.25, ratio>=0.6, delta<=30 (MEDIAN -
#               BASE_MEDIAN, in UNIT), median<=15 (in UNIT)
#
# Fields hold no tab or newline (bench_row refuses them). internal/benchreport parses these
# lines, and scripts written in Python print the same line themselves.
# shellcheck shell=bash
bench_row() {
  if [ "$#" -ne 11 ]; then
    echo "bench_row: want 11 fields, got $#: $*" >&2
    return 2
  fi
  local f
  for f in "$@"; do
    case $f in
    *$'\t'* | *$'\n'* | '') echo "bench_row: empty field, or a tab or newline in field \"$f\"" >&2; return 2 ;;
    esac
  done
  local IFS=$'\t'
  printf 'bench-row\t%s\n' "$*"
}
# bench_phase BENCH BOX PHASE SECONDS: one phase of a box's creation, from git corral's progress
# lines ("HH:MM:SS corral: PHASE (ELAPSEDs)"); bench_phases FILE BENCH BOX prints every phase
# in FILE with its duration (the next line's elapsed time minus its own).
bench_phases() {
  awk -v bench="$2" -v box="$3" '
    /^[0-9][0-9]:[0-9][0-9]:[0-9][0-9] corral: .* \([0-9.]+s\)$/ {
      el = $NF; gsub(/[()s]/, "", el)
      name = $0; sub(/^[0-9:]+ corral: /, "", name); sub(/ \([0-9.]+s\)$/, "", name)
      if (n > 0) printf "bench-phase\t%s\t%s\t%s\t%.1f\n", bench, box, names[n], el - at[n]
      n++; names[n] = name; at[n] = el
    }
    END { if (n > 0) printf "bench-phase\t%s\t%s\t%s\t%.1f\n", bench, box, "total (" names[n] ")", at[n] }' "$1"
}
