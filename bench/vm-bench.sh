#!/usr/bin/env bash
# vm benchmarks (docs/benchmarks-history.md "## vm"), measured side by side in one run, as root; the
# product and limactl run as the unprivileged user $CORRAL_USER (limactl refuses root).
#   1. box creation to ready: `git corral run --yes -- true` from no box, versus a raw
#      `limactl start` of the very template git corral rendered (same image, same TCG override).
#   2. on a warm box: `git corral run -- true` (guard check included: the guard daemon; with a
#      forwarded variable; and the in-band and separate session checks of older boxes; and
#      with a connection holder that keeps no warm shell, in a second group) versus
#      plain `ssh -F <instance>/ssh.config lima-<box> true` versus `limactl shell <box> true`
#      (hyperfine).
# Every box it starts is stopped and deleted on exit. Needs: scripts/setup.sh done, hyperfine.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-15}
BOOTS=${BOOTS:-1}   # create-to-ready pairs (git corral, then raw limactl); 0 skips them
NETWORK=${NETWORK:-full}  # the box's network mode: full, broker or offline
BASE=/var/tmp/corral-bench
gcs='' raws=''
# shellcheck source=bench/lib.sh
. bench/lib.sh
# shellcheck source=bench/result.sh
. bench/result.sh

rm -rf "${BASE:?}/home" "${BASE:?}/proj"
install -d -o "$CORRAL_USER" "$BASE/home" "$BASE/proj"
U sh -c "cd $BASE/proj && git init -q . && echo bench > README"
BOX=$(U "$BASE/bin/git-corral" -C "$BASE/proj" info --json | sed -n 's/.*"box": "\(.*\)".*/\1/p')
if [ "$NETWORK" != full ]; then
  install -d -o "$CORRAL_USER" -m 700 "$BASE/home/projects"
  printf 'network = "%s"\n' "$NETWORK" | install -o "$CORRAL_USER" -m 600 /dev/stdin "$BASE/home/projects/$BOX.toml"
fi
# git corral's own delete first: it also ends the box's broker (broker mode) and its holder.
cleanup() {
  U "$BASE/bin/git-corral" -C "$BASE/proj" delete --yes >/dev/null 2>&1 || true
  for b in "$BOX" raw-bench; do U "$LIMACTL" --tty=false delete --force "$b" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
echo "box $BOX ($NETWORK); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

for i in $(seq "$BOOTS"); do
  cleanup
  t=$(now); U "$BASE/bin/git-corral" -C "$BASE/proj" run --yes -- true 2>/dev/null
  gcs="$gcs $(since "$t")"
  echo "RESULT create-to-ready git-corral run $i: ${gcs##* }s"
  cp "$BASE/home/boxes/$BOX.yaml" "$BASE/raw.yaml"; chmod 644 "$BASE/raw.yaml"
  U "$BASE/bin/git-corral" -C "$BASE/proj" delete --yes >/dev/null 2>&1
  t=$(now); U "$LIMACTL" --tty=false start --timeout 20m --name raw-bench "$BASE/raw.yaml" >/dev/null 2>&1
  raws="$raws $(since "$t")"
  echo "RESULT create-to-ready limactl start $i: ${raws##* }s"
  U "$LIMACTL" --tty=false delete --force raw-bench >/dev/null 2>&1
done
# The common result line (bench/result.sh): the target of docs/benchmarks-history.md "## vm", 1.1x a raw start.
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
if [ "$BOOTS" -gt 0 ]; then
  # shellcheck disable=SC2086 # the lists split into their numbers
  bench_row boot "box creation to ready" "git corral run --yes -- true" "$(med $gcs)" "raw limactl start" \
    "limactl start of the template git corral rendered" "$(med $raws)" s "$BOOTS" - "ratio<=1.1"
fi

t=$(now); U "$BASE/bin/git-corral" -C "$BASE/proj" run --yes -- true 2>/dev/null
echo "RESULT create-to-ready git-corral run (box for the warm runs): $(since "$t")s"
CFG="$BASE/home/lima/$BOX/ssh.config"
U hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$BASE/home/warm.json" \
  -n "git corral run -- true" "$BASE/bin/git-corral -C $BASE/proj run -- true" \
  -n "git corral run -- true, no connection holder" "env CORRAL_NO_CONNECTION_HOLDER=1 $BASE/bin/git-corral -C $BASE/proj run -- true" \
  -n "ssh -F ssh.config true" "ssh -F $CFG lima-$BOX true" \
  -n "ssh -F ssh.config guard-check session" "ssh -F $CFG lima-$BOX /usr/local/libexec/corral/guard-check session" \
  -n "ssh -F ssh.config . session-check inband" "ssh -F $CFG lima-$BOX . /usr/local/libexec/corral/session-check inband" \
  -n "git corral run --env VAR -- true" "env CORRAL_BENCH_FORWARDED=1 $BASE/bin/git-corral -C $BASE/proj run --env CORRAL_BENCH_FORWARDED -- true" \
  -n "git corral run -- true, in-band session check" "env CORRAL_GUARD_CHECK=inband $BASE/bin/git-corral -C $BASE/proj run -- true" \
  -n "git corral run -- true, separate session check" "env CORRAL_GUARD_CHECK=separate $BASE/bin/git-corral -C $BASE/proj run -- true" \
  -n "limactl shell true" "$LIMACTL shell --workdir / $BOX true" 2>&1 | grep -v '^ *$'
# The same without warm shells: a holder started with CORRAL_NO_WARM_SHELL=1 (the one running
# is ended first, by the PID of its command line), plain ssh again beside it.
stop_holder() {
  for pid in $(ps -eo pid=,args= | awk -v exe="$BASE/bin/git-corral" '$2 == exe && / connection serve/ {print $1}'); do
    kill "$pid" 2>/dev/null || true
  done
  sleep 0.5
}
stop_holder
U hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$BASE/home/cold.json" \
  -n "git corral run -- true, no warm shell" "env CORRAL_NO_WARM_SHELL=1 $BASE/bin/git-corral -C $BASE/proj run -- true" \
  -n "ssh -F ssh.config true (beside no warm shell)" "ssh -F $CFG lima-$BOX true" 2>&1 | grep -v '^ *$'
stop_holder
python3 - "$BASE/home/warm.json" "$BASE/home/cold.json" <<'PY'
import json, sys
for f, base in ((sys.argv[1], "ssh -F ssh.config true"), (sys.argv[2], "ssh -F ssh.config true (beside no warm shell)")):
    r = json.load(open(f))["results"]
    m = {x["command"]: x["median"] for x in r}
    ssh = m[base]
    for k, v in m.items():
        print(f"RESULT warm median {k}: {v*1000:.0f} ms ({v/ssh:.2f}x plain ssh)")
PY

# The mount: 200 small files written on the project mount (this box's mount type) vs guest /tmp.
for where in "$BASE/proj/smallfiles" /tmp/smallfiles; do
  t=$(now)
  U "$BASE/bin/git-corral" -C "$BASE/proj" run -- sh -c "mkdir -p $where && cd $where && for i in \$(seq 200); do echo \$i > f\$i; done" 2>/dev/null
  echo "RESULT 200 small files in $where (via git corral run): $(since "$t")s"
done
