#!/usr/bin/env bash
# bench/agents-install.sh — `git corral agents install` times of docs/BENCHMARKS.md, against the
# real npm registry with the ordinary npm client. For each agent and run, in a fresh
# CORRAL_HOME (npm's cache lives inside it, so nothing is shared between runs):
#   cold     — nothing cached: npm view + npm pack of every package (the Node runtime too where
#              the agent needs one), sha512 check, extraction, manifest;
#   cached   — the store deleted, the verified tarballs kept: npm view (for the integrity
#              string), sha512 of the cached tarball, extraction, manifest;
#   present  — everything installed: the full manifest check (sha512 of every file), no network.
# Delivery into a box is a read-only mount of the store (no copy), so these are the whole cost.
#
#   bash bench/agents-install.sh                  # codex gemini claude, 3 runs each
#   RUNS=1 bash bench/agents-install.sh codex     # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
agents=("$@")
[ ${#agents[@]} -gt 0 ] || agents=(codex gemini claude)
command -v npm >/dev/null || { echo "bench/agents-install.sh: npm is not on PATH" >&2; exit 1; }
go build -o bin/git-corral ./cmd/git-corral
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# $(date -u +%FT%TZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg), npm $(npm --version), runs $runs"

# secs CMD... runs CMD with stdout and stderr to a log and prints its wall time in seconds.
secs() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >>"$work/log" 2>&1 || { echo "failed: $*" >&2; tail -5 "$work/log" >&2; exit 1; }
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

printf '%-8s %10s %10s %10s %12s\n' agent cold_s cached_s present_s store_MB
for agent in "${agents[@]}"; do
	: >"$work/cold" && : >"$work/cached" && : >"$work/present"
	for _ in $(seq "$runs"); do
		home="$work/home"
		rm -rf "$home" && mkdir -p "$home"
		export CORRAL_HOME="$home" HOME="$home"
		secs bin/git-corral agents install "$agent" >>"$work/cold"
		mb=$(du -sm "$home/agents/store" | cut -f1)
		rm -rf "$home/agents/store"
		secs bin/git-corral agents install "$agent" >>"$work/cached"
		secs bin/git-corral agents install "$agent" >>"$work/present"
	done
	printf '%-8s %10.1f %10.1f %10.1f %12s\n' "$agent" "$(median <"$work/cold")" "$(median <"$work/cached")" "$(median <"$work/present")" "$mb"
done
