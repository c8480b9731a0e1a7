#!/bin/sh
# bench/vm-session.sh — one `true` round trip to a loopback OpenSSH sshd: git corral's SSH client
# (fresh connection; warm connection) versus `ssh -F <Lima-like config> host true`, with and
# without ControlMaster. Runs BenchmarkSessionRoundTrip COUNT times (as root: the benchmark
# starts sshd and a temporary user) and prints the median ms per round trip of each variant.
#
#   sudo bench/vm-session.sh [COUNT (default 5)] [ITERATIONS per run (default 20)]
set -eu
count=${1:-5}
iters=${2:-20}
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '^BenchmarkSessionRoundTrip$' -benchtime "${iters}x" -count "$count" ./vm/ | tee "$out" >&2
echo "| variant | median ms per round trip ($count runs x $iters) |"
echo "| --- | --- |"
for v in client-dial client-warm ssh ssh-curve25519 ssh-controlmaster; do
	grep "^BenchmarkSessionRoundTrip/$v-[0-9]* " "$out" | awk '{print $3}' | sort -n |
		awk -v v="$v" '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "| %s | %.1f |\n", v, m/1e6}'
done
