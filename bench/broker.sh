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
bin/brokerbench -bin bin/git-corral -runs 9 -bytes $((512 << 20)) -samples 1000 -idle 2000 "$@"
echo "# $(date -u +%FT%TZ) load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
