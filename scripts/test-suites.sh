#!/usr/bin/env bash
# The README's test command (make test): every Go test, then the end-to-end suite on real boxes.
# Prints each suite's test count and wall time, then "N passed, N failed" (CI reads that line).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
# CORRAL_TEST_LOGDIR keeps each suite's go test -json output there (per-test times, for finding
# where the suite's time goes); by default it goes to a temporary directory, removed at the end.
if [ -n "${CORRAL_TEST_LOGDIR:-}" ]; then
  logdir=$CORRAL_TEST_LOGDIR
  mkdir -p "$logdir" && : >"$logdir/summary" || exit 1
else
  logdir=$(mktemp -d)
  trap 'rm -rf "$logdir"' EXIT
fi

# What scripts/e2e-record.sh reads back: when, which commit, which machine, how loaded.
suite_t0=$(date +%s)
echo "run: date=$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo -dirty)"
echo "machine: cpu=\"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)\" cores=$(nproc) kernel=$(uname -r) load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""

run_suite() { # name, then the go test arguments
  local name=$1; shift
  local t0 t1 rc
  t0=$(date +%s)
  "$GO" test -json "$@" >"$logdir/$name.json" 2>"$logdir/$name.err"
  rc=$?
  t1=$(date +%s)
  # Human-readable output: the package lines and any failing test's output; for the suites of
  # real boxes, each group's result and wall time.
  local groups=
  [ "$name" = unit ] || groups=-groups
  "$GO" run ./internal/testsummary -name "$name" -seconds $((t1 - t0)) $groups <"$logdir/$name.json" | tee -a "$logdir/summary"
  cat "$logdir/$name.err" >&2
  return $rc
}

rc=0
# Not in the unit suite (so not counted as skipped there): the real-box tests, which the realbox
# suite below runs, and the clone measurement, which make bench runs (CORRAL_BENCH=1).
run_suite unit -count=1 -timeout 30m -skip '^(TestLimaBox|TestProbeKVMLive|TestMeasureClone50MB)$' ${GOTESTFLAGS:-} ./... || rc=1
# The real-box tests outside ./e2e, opt-in in the unit suite because they boot a VM or a kernel:
# the git shadow on a real box (gitshadow TestLimaBox) and the real KVM probe (vm
# TestProbeKVMLive; on a machine without a usable /dev/kvm it runs what it can and says so). They
# need the current recipe's base image; without it the suite fails rather than skip.
recipe=$("$GO" run ./cmd/git-corral image list --json 2>/dev/null | sed -n 's/^ *"recipe": *"\([0-9a-f]*\)".*/\1/p')
img=/var/cache/git-corral/images/$recipe
if [ -n "$recipe" ] && [ -e "$img/image.json" ]; then
  GITSHADOW_LIMA_IMAGE=$img CORRAL_KVM_PROBE_IMAGE=$img \
    run_suite realbox -count=1 -timeout 20m -run '^(TestLimaBox|TestProbeKVMLive)$' ./gitshadow ./vm || rc=1
else
  echo "test-suites: no base image of recipe '$recipe' in $img: the real-box suite cannot run (scripts/setup.sh builds it)" >&2
  rc=1
fi
# CORRAL_E2E_JOBS scenario groups run side by side (default 2; e2e/parallel_test.go).
jobs=${CORRAL_E2E_JOBS:-2}
CORRAL_E2E=1 CORRAL_E2E_JOBS=$jobs run_suite e2e -count=1 -timeout 80m -parallel "$jobs" ./e2e/ || rc=1
echo
echo "== test suites"
grep '^group ' "$logdir/summary"
grep '^suite ' "$logdir/summary"
echo "total: time=$(($(date +%s) - suite_t0))s load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
awk '/^suite /{for(i=1;i<=NF;i++){if($i~/^passed=/){split($i,a,"=");p+=a[2]} if($i~/^failed=/){split($i,a,"=");f+=a[2]} if($i~/^skipped=/){split($i,a,"=");s+=a[2]}}} END{printf "%d passed, %d failed, %d skipped\n", p, f, s}' "$logdir/summary"
exit $rc
