#!/bin/sh
# bench/boxdirs.sh — a file-heavy install on the project mount (9p) versus in a box_dirs
# directory on the box's own disk, side by side on one running box. The workload is what
# `npm ci` does to a disk, generated so it needs no network: FILES small files in nested package
# directories (100 per directory) written by one process, then every file listed and read back,
# then the tree removed. Each run times the three phases inside the guest (date +%s%N around
# them, so git corral's fixed cost per command is not counted), alternating mount and box_dirs,
# and the script prints the medians and the ratio mount / box_dirs.
#
# Run it as the box's host user in a checkout whose .corral.toml has box_dirs = ["node_modules"]
# (any network mode), after one `git corral run --yes -- true` has made the box:
#   bench/boxdirs.sh [RUNS (default 5)] [FILES (default 20000)]
set -eu
runs=${1:-5}
files=${2:-20000}
top=$(git rev-parse --show-toplevel)
cd "$top"
if ! grep -Eq '^box_dirs *= *\[.*"node_modules/?"' .corral.toml 2>/dev/null; then
	echo "bench/boxdirs.sh: $top/.corral.toml must have box_dirs = [\"node_modules\"]" >&2
	exit 2
fi
# shellcheck disable=SC2016 # expanded in the guest
workload='set -eu
d=$1/corral-bench n=$2
rm -rf "$d"
mkdir -p "$d"
cd "$d"
t0=$(date +%s%N)
awk -v n="$n" "BEGIN { for (i = 0; i <= n / 100; i++) print \"p\" i \"/lib\" }" | xargs mkdir -p
awk -v n="$n" "BEGIN { for (i = 0; i < n; i++) { f = sprintf(\"p%d/lib/f%d.js\", int(i / 100), i); printf \"module.exports = %d;\\n\", i > f; close(f) } }"
t1=$(date +%s%N)
got=$(find . -type f | wc -l)
find . -type f -exec cat {} + >/dev/null
t2=$(date +%s%N)
cd / && rm -rf "$d"
t3=$(date +%s%N)
[ "$got" -eq "$n" ] || { echo "wrote $got files, want $n" >&2; exit 1; }
echo "RESULT write=$(((t1 - t0) / 1000000)) read=$(((t2 - t1) / 1000000)) remove=$(((t3 - t2) / 1000000)) total=$(((t3 - t0) / 1000000))"'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
i=0
while [ "$i" -lt "$runs" ]; do
	for where in mount box_dirs; do
		dir=bench-on-mount
		[ "$where" = box_dirs ] && dir=node_modules
		line=$(git corral run -- sh -c "$workload" sh "$dir" "$files" | grep '^RESULT ')
		echo "$where $line" | tee -a "$out" >&2
	done
	i=$((i + 1))
done
median() { # $1 = where, $2 = phase
	grep "^$1 " "$out" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2 | sort -n |
		awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.0f", m }'
}
echo "$runs runs of $files files each, alternating; medians in ms:"
echo
echo "| phase | project mount (9p) | box_dirs (box disk) | mount / box_dirs |"
echo "| --- | --- | --- | --- |"
for phase in write read remove total; do
	m=$(median mount "$phase")
	b=$(median box_dirs "$phase")
	echo "| $phase | $m | $b | $(awk -v m="$m" -v b="$b" 'BEGIN { if (b > 0) printf "%.1f×", m / b; else print "n/a" }') |"
done
