#!/usr/bin/env bash
# golden-bench.sh: time to a ready box from a golden base versus from scratch, through git corral
# itself, and the disk each box uses. Run as root from the repository; git corral (and limactl)
# run as $BENCH_USER (default corral-ci) with their own CORRAL_HOME under $W.
#
# "Ready" means `git corral run -- true` returned 0: the box was created, booted, provisioned,
# passed the guest guard check of its mode, and ran a session. One project; PAIRS=N (default 2)
# pairs of boxes, one at a time, each deleted before the next:
#   first  run with golden = true and no base: builds the golden base, then the box from it
#   pair i run --no-golden (from scratch), delete; run (from the golden base, the "second box":
#          it resumes the base's saved state), delete; and, with DISKONLY=1, a box that boots from
#          the golden disk without resuming (CORRAL_NO_GOLDEN_STATE=1), delete
# then one box of a second project with the same .corral.toml (it resumes the same base).
# At the end the golden disk's and state's sha256 and mtime are compared with their values after
# the build.
# NETWORK=broker|offline|full sets the project's network mode (default: the policy default, broker since issue #34).
set -euo pipefail
U=${BENCH_USER:-corral-ci}
PAIRS=${PAIRS:-2}
W=${BENCH_DIR:-/var/tmp/corral-golden-bench}
REPO=$(cd "$(dirname "$0")/.." && pwd)
H=$W/home
P=$W/projects/bench
BIN=$W/bin/git-corral
LC=${LIMACTL:-/usr/local/lib/git-corral/lima/bin/limactl}
# shellcheck source=bench/result.sh
. "$REPO/bench/result.sh"

rm -rf "$W"
mkdir -p "$W/bin" "$H" "$P"
(cd "$REPO" && go build -o "$BIN" ./cmd/git-corral)
chmod 755 "$W" "$W/bin" "$BIN"
chown -R "$U:" "$H" "$W/projects"
as() { runuser -u "$U" -- env HOME="$H" CORRAL_HOME="$H" PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
  LANG=C.UTF-8 GIT_CONFIG_NOSYSTEM=1 "$@"; }
# GC_ENV=NAME=VALUE adds one variable to git corral's environment.
gc() {
  if [ -n "${GC_ENV:-}" ]; then as "$GC_ENV" "$BIN" -C "$P" "$@"; else as "$BIN" -C "$P" "$@"; fi
}
cleanup() {
  gc delete --yes >/dev/null 2>&1 || true
  for n in $(as env LIMA_HOME="$H/lima" "$LC" --tty=false list --format '{{.Name}}' 2>/dev/null); do
    as env LIMA_HOME="$H/lima" "$LC" --tty=false stop --force "$n" >/dev/null 2>&1 || true
    as env LIMA_HOME="$H/lima" "$LC" --tty=false delete --force "$n" >/dev/null 2>&1 || true
  done
  gc golden prune >/dev/null 2>&1 || true
}
trap cleanup EXIT
as sh -c "cd '$P' && git init -q . && echo hello > README && printf 'golden = true\n' > .corral.toml"
case ${NETWORK:-} in
'') ;;
full | broker | offline) as sh -c "printf 'network = \"%s\"\n' '$NETWORK' >> '$P/.corral.toml'" ;;
*) echo "NETWORK must be full, broker or offline" >&2; exit 2 ;;
esac
BOX=$(gc info --json | sed -n 's/.*"box": *"\([^"]*\)".*/\1/p' | head -1)
[ -n "$BOX" ] || { echo "cannot read the box name from git corral info --json" >&2; exit 1; }
INST=$H/lima/$BOX

# t LABEL ARGS...: run git corral ARGS, print LABEL, wall seconds, QEMU CPU seconds of the box,
# instance dir and diffdisk sizes (MB, allocated), then delete the box. The wall time goes to
# $W/walls (label, tab, seconds) for the bench-row lines at the end, and PHASES=KEY prints the
# box's phases from git corral's progress lines as bench-phase lines (bench/result.sh).
t() {
  local label=$1 s e cpu wall
  shift
  s=$(date +%s.%N)
  gc "$@" >"$W/box.log" 2>&1 || { cat "$W/box.log" >>"$W/log"; echo "$label: git corral $* FAILED (log: $W/log)"; tail -n 5 "$W/log"; exit 1; }
  e=$(date +%s.%N)
  cat "$W/box.log" >>"$W/log"
  wall=$(echo "$e - $s" | bc)
  cpu=$(ps -o times= -p "$(cat "$INST/qemu.pid")" | tr -d ' ')
  printf '%s\twall %.1f s\tQEMU CPU %s s\tinstance %s MB\tdiffdisk %s MB\tbasedisk %s MB\tload %s\n' "$label" \
    "$wall" "$cpu" "$(du -sm "$INST" | cut -f1)" "$(du -m "$INST/diffdisk" | cut -f1)" \
    "$(du -m "$INST/basedisk" | cut -f1)" "$(cut -d' ' -f1 /proc/loadavg)"
  printf '%s\t%s\n' "$label" "$wall" >>"$W/walls"
  [ -z "${PHASES:-}" ] || bench_phases "$W/box.log" golden "$PHASES"
  gc delete --yes >>"$W/log" 2>&1
}
# median LABEL: the median wall of the boxes labelled "pair N LABEL", or LABEL itself.
median() {
  awk -F'\t' -v k="$1" '$1 == k || ($1 ~ /^pair [0-9]+ / && substr($1, index(substr($1, 6), " ") + 6) == k) {print $2}' "$W/walls" | sort -n |
    awk '{a[NR]=$1} END {if (NR) printf "%.1f", (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
t "first box, builds the golden base" run --yes -- true
G=
for d in "$H"/golden/*/; do G=${d%/}; done
[ -f "$G/golden.qcow2" ] || { echo "no golden base was built under $H/golden" >&2; exit 1; }
files=("$G/golden.qcow2")
[ -f "$G/golden.state" ] && files+=("$G/golden.state")
sum0=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
mt0=$(stat -c %Y "${files[@]}" | tr '\n' ' ')
echo "golden base: disk $(du -m "$G/golden.qcow2" | cut -f1) MB, state $(du -m "$G/golden.state" 2>/dev/null | cut -f1) MB, built in $(sed -n 's/.*"buildSeconds": *\([0-9.]*\).*/\1/p' "$G/golden.json") s"
for i in $(seq 1 "$PAIRS"); do
  PHASES=$([ "$i" = 1 ] && echo "from scratch (pair 1)") t "pair $i from scratch" run --yes --no-golden -- true
  PHASES=$([ "$i" = 1 ] && echo "from golden (pair 1)") t "pair $i from golden" run --yes -- true
  if [ "${DISKONLY:-0}" = 1 ]; then
    GC_ENV=CORRAL_NO_GOLDEN_STATE=1 t "pair $i golden disk only" run --yes -- true
  fi
done
# A box of another project of the same recipe and mode: it resumes the same base, and runs
# again the product scripts that name the project (and the broker port).
P2=$W/projects/bench-other
as sh -c "mkdir -p '$P2' && cd '$P2' && git init -q . && echo hello > README && cp '$P/.corral.toml' ."
BOX2=$(as "$BIN" -C "$P2" info --json | sed -n 's/.*"box": *"\([^"]*\)".*/\1/p' | head -1)
P_SAVE=$P INST_SAVE=$INST
P=$P2 INST=$H/lima/$BOX2
t "another project from golden" run --yes -- true
P=$P_SAVE INST=$INST_SAVE
sum1=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
mt1=$(stat -c %Y "${files[@]}" | tr '\n' ' ')
if [ "$sum0" = "$sum1" ] && [ "$mt0" = "$mt1" ]; then
  echo "golden base unchanged after the boxes used it: sha256 of ${files[*]##*/} $sum1, mtime $mt1"
else
  echo "GOLDEN CHANGED: sha256 $sum0 -> $sum1, mtime $mt0 -> $mt1"
fi
# The figures of issue #30 (a second box from golden in at most 15 s and 0.2x one from scratch),
# one bench-row line each (bench/result.sh): medians of the PAIRS pairs, run one after the other.
scratch=$(median "from scratch")
bench_row golden "second box, from the golden base" "git corral run --yes -- true" "$(median "from golden")" \
  "box from scratch" "git corral run --yes --no-golden -- true" "$scratch" s "$PAIRS" - "median<=15,ratio<=0.2"
if [ "${DISKONLY:-0}" = 1 ]; then
  bench_row golden "box from the golden disk, no saved state" "CORRAL_NO_GOLDEN_STATE=1 git corral run --yes -- true" \
    "$(median "golden disk only")" "box from scratch" "git corral run --yes --no-golden -- true" "$scratch" s "$PAIRS" - -
fi
bench_row golden "another project's box, from the same base" "git corral -C OTHER run --yes -- true" \
  "$(median "another project from golden")" "box from scratch" "git corral run --yes --no-golden -- true" "$scratch" s "1/$PAIRS" - -
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
