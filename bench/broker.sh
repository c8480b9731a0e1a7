#!/usr/bin/env bash
# bench/broker.sh — the broker benchmarks of docs/BENCHMARKS.md, side by side in one run:
# direct TCP, git corral's broker, squid and tinyproxy (Debian packages), all on loopback.
# Every proxy is started here with a temporary configuration and stopped by its PID.
#
#   bash bench/broker.sh                 # the recorded run (9 rounds of 512 MiB, ~5 minutes)
#   bash bench/broker.sh -runs 3 -bytes 134217728 -samples 200 -idle 500   # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in squid tinyproxy; do
	command -v "$tool" >/dev/null || echo "bench/broker.sh: $tool not installed; it will be skipped" >&2
done
go build -o bin/git-corral ./cmd/git-corral
go build -o bin/brokerbench ./bench/brokerbench
echo "# $(date -u +%FT%TZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exec bin/brokerbench -bin bin/git-corral -runs 9 -bytes $((512 << 20)) -samples 1000 -idle 2000 "$@"
