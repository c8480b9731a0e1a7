#!/bin/sh
# bench/vm-session.sh — one `true` round trip to a loopback OpenSSH sshd: git corral's SSH client
# (fresh connection; warm connection) versus `ssh -F <Lima-like config> host true`, with
# curve25519 key exchange, and through a warm ControlMaster. Runs BenchmarkSessionRoundTrip
# ROUNDS times, each round one pass over every variant (interleaved, so a change in machine load
# hits all variants alike), as root (the benchmark starts sshd and a temporary user), and prints
# the median, min and max ms per round trip of each variant.
#
#   sudo bench/vm-session.sh [ROUNDS (default 5)] [ITERATIONS per variant and round (default 20)]
set -eu
rounds=${1:-5}
iters=${2:-20}
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -c -o "$out.test" ./vm/
trap 'rm -f "$out" "$out.test" "$out.table"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
	(cd vm && "$out.test" -test.run '^$' -test.bench '^BenchmarkSessionRoundTrip$' -test.benchtime "${iters}x") | tee -a "$out" >&2
	i=$((i + 1))
done
echo "$rounds rounds x $iters round trips per variant; ms per round trip:"
echo
echo "| variant | median | min | max |"
echo "| --- | --- | --- | --- |"
for v in client-dial client-warm ssh ssh-curve25519 ssh-controlmaster; do
	grep "^BenchmarkSessionRoundTrip/$v-[0-9]* " "$out" | awk '{print $3}' | sort -n |
		awk -v v="$v" '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "| %s | %.1f | %.1f | %.1f |\n", v, m/1e6, a[1]/1e6, a[NR]/1e6}'
done | tee "$out.table"
# The common result lines (bench/result.sh, printed here with printf: this script is POSIX sh):
# a fresh connection against plain ssh, a warm one against ssh's warm ControlMaster.
awk -F' [|] ' -v runs="$rounds rounds x $iters" '
	{ sub(/^[|] /, ""); m[$1] = $2 }
	END {
		printf "bench-row\tvm-session\tclient, fresh connection (client-dial)\tvm.Dial + Output(true) + Close\t%s\tssh -F cfg host true\tssh -F cfg host true\t%s\tms\t%s\t-\t-\n", m["client-dial"], m["ssh"], runs
		printf "bench-row\tvm-session\tclient, warm connection (client-warm)\tOutput(true)\t%s\tssh through a warm ControlMaster\tssh -F cfg -o ControlPath=... host true\t%s\tms\t%s\t-\t-\n", m["client-warm"], m["ssh-controlmaster"], runs
	}' "$out.table"
