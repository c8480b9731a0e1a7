#!/usr/bin/env bash
# bench/broker.sh — the broker benchmarks of docs/BENCHMARKS.md, side by side in one run:
# direct TCP, a plain Go relay with no checks (the baseline of any proxy process), git corral's
# broker, squid and tinyproxy (Debian packages), all on loopback. Every proxy is started here with
# a temporary configuration and stopped by its PID.
#
#   bash bench/broker.sh                 # the recorded run (9 rounds of 512 MiB, ~6 minutes)
#   bash bench/broker.sh -runs 3 -bytes 134217728 -samples 200 -idle 500   # a quick look
#   bash bench/broker.sh -measure latency -only relay,corral                # one table
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in squid tinyproxy; do
	command -v "$tool" >/dev/null || echo "bench/broker.sh: $tool not installed (apt-get install $tool); it will be skipped" >&2
done
go build -o bin/git-corral ./cmd/git-corral
go build -o bin/brokerbench ./bench/brokerbench
versions="$(squid -v 2>/dev/null | sed -n '1s/.*Version /squid /p'), $(tinyproxy -v 2>/dev/null || true)"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +dirty)"
echo "# $(date -u +%FT%TZ) commit $commit, $(nproc) cores, load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $versions"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bin/brokerbench -bin bin/git-corral -runs 9 -bytes $((512 << 20)) -samples 1000 -idle 2000 "$@" | tee "$out"
# The common result lines (bench/result.sh), read from the three tables above: each proxy
# against direct TCP (throughput: the median of the per-round ratios; connection setup: the p50)
# and, for memory, against the plain relay; the targets of docs/benchmarks-history.md "## broker" on git corral's row.
awk -F' *[|] *' -v OFS='\t' '
  /^loopback, / { split($0, part, ", "); rounds = part[2] + 0; conns = part[3] + 0; idle = part[4] + 0 }
  /^[|] tunnel throughput/ { table = "tp"; next }
  /^[|] connection setup/ { table = "lat"; next }
  /^[|] [0-9]+ idle tunnels/ { table = "mem"; next }
  /^[|]---/ { next }
  !/^[|]/ { table = ""; next }
  table == "tp" { mibs[$2] = $3; r = $5; sub(/×/, "", r); ratio[$2] = r; tp[++ntp] = $2 }
  table == "lat" { p50[$2] = $3; lat[++nlat] = $2 }
  table == "mem" { rss = $4; sub(/ .*/, "", rss); mem[$2] = rss; mm[++nmem] = $2 }
  END {
    for (i = 1; i <= ntp; i++) if (tp[i] != "direct")
      print "bench-row", "broker", tp[i] " tunnel throughput", "CONNECT tunnel through " tp[i] ", 1 MiB writes", mibs[tp[i]], "direct TCP", "loopback TCP to the same sink", mibs["direct"], "MiB/s", rounds " rounds", ratio[tp[i]], (tp[i] == "corral" ? "ratio>=0.6" : "-")
    for (i = 1; i <= nlat; i++) if (lat[i] != "direct")
      print "bench-row", "broker", lat[i] " connection setup p50", "connect() to the proxy 200 through " lat[i], p50[lat[i]], "direct TCP connect p50", "connect() to the target", p50["direct"], "ms", conns, "-", (lat[i] == "corral" ? "delta<=0.3" : "-")
    for (i = 1; i <= nmem; i++) if (mm[i] != "relay")
      print "bench-row", "broker", mm[i] " RSS holding " idle " idle tunnels", mm[i], mem[mm[i]], "relay (no checks)", "bench/brokerbench/relay.go", mem["relay"], "MiB", "1", "-", (mm[i] == "corral" ? "median<=64" : "-")
  }' "$out"
echo "# $(date -u +%FT%TZ) load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
