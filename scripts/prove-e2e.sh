#!/usr/bin/env bash
# Prove that the end-to-end suite tests what it says: build a copy of REV (default HEAD) with one
# guard deliberately broken (e2e/testdata/break-shadow.patch: the box is rendered without the git
# shadow, so nothing in the guest keeps .git read-only, and without the host-side snapshot, watch
# and restore), run only the gitshadow scenario of the suite against it on a real box, and
# require that scenario to FAIL with the guard's own message.
#
#   sudo CORRAL_E2E_BASE=/var/tmp/corral-e2e-prove scripts/prove-e2e.sh [--control] [REV]
#
# --control first runs the same subtests on REV unchanged and requires them to pass (a second box,
# booted after the first is deleted), so that the failure is the patch's doing, not the machine's.
#
# Exit 0: the scenario failed as it must (the suite catches the broken guard).
# Exit 1: the scenario PASSED against the broken build: it does not test what it says.
# Exit 2: inconclusive (the patch does not apply, the build or a prerequisite subtest failed).
# The broken build exists only in a temporary directory that is removed on exit, and every box
# under the run's own CORRAL_E2E_BASE is stopped and deleted, whatever happens. The product has no
# switch that turns a guard off: breaking it takes a patch and a rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
control=0
if [ "${1:-}" = --control ]; then control=1; shift; fi
rev=${1:-HEAD}
base=${CORRAL_E2E_BASE:-/var/tmp/corral-e2e-prove}
case $base in /*) ;; *) echo "prove-e2e: CORRAL_E2E_BASE must be an absolute path, got '$base'" >&2; exit 2 ;; esac
patch=e2e/testdata/break-shadow.patch
log=${PROVE_LOG:-/tmp/prove-e2e.log}
# The gitshadow scenario and the subtests it stands on: the box boots and runs only once its
# provision script is approved, so those two run first (a run that never reaches the box would
# leave nothing planted to find).
run='^TestGuardsFullMode$/^(an_unapproved_provision|after_review|hooks_and_config)'
limactl=${CORRAL_LIMACTL:-/usr/local/lib/git-corral/lima/bin/limactl}
user=${CORRAL_E2E_USER:-corral-ci}

tree=$(mktemp -d /tmp/prove-e2e.XXXXXX)
# shellcheck disable=SC2317 # boxes and cleanup run from the EXIT trap
boxes() { # the boxes under this run's base, one per line
  local cmd=("$limactl" --tty=false list --format '{{.Name}}')
  if [ "$(id -u)" -eq 0 ]; then cmd=(runuser -u "$user" -- "${cmd[@]}"); fi
  env HOME="$base/home" CORRAL_HOME="$base/home" LIMA_HOME="$base/home/lima" "${cmd[@]}" 2>/dev/null || true
}
# shellcheck disable=SC2317
cleanup() {
  local b
  for b in $(boxes); do
    echo "prove-e2e: deleting leftover box $b" >&2
    if [ "$(id -u)" -eq 0 ]; then
      runuser -u "$user" -- env HOME="$base/home" LIMA_HOME="$base/home/lima" "$limactl" --tty=false delete --force "$b" >/dev/null 2>&1 || true
    else
      LIMA_HOME="$base/home/lima" "$limactl" --tty=false delete --force "$b" >/dev/null 2>&1 || true
    fi
  done
  rm -rf "$tree"
}
trap cleanup EXIT

# A plain copy of REV, not a registered git worktree: a killed run leaves nothing behind in the
# repository's metadata, and the build under test is exactly REV (plus the patch).
git archive --format=tar "$rev" | tar -x -C "$tree"
patch=$PWD/$patch
scenario='TestGuardsFullMode/hooks_and_config_the_box_plants_never_reach_the_host'
# The guard's own messages in guards_test.go: any one shows the planted metadata reached the host.
expect='the host.s git ran something the box planted|the pre-commit hook reached the host|core\.fsmonitor on the host = '

# run_scenario LOG: the selected subtests of the tree's e2e suite on one real box; prints PASS,
# FAIL (the scenario failed with a guard message) or INCONCLUSIVE.
run_scenario() {
  local log=$1 rc t0
  echo "prove-e2e: go test -run '$run' ./e2e/ (CORRAL_E2E_BASE=$base), log in $log" >&2
  t0=$(date +%s)
  rc=0
  (cd "$tree" && CORRAL_E2E=1 CORRAL_E2E_BASE=$base go test -count=1 -timeout 30m -v -run "$run" ./e2e/) >"$log" 2>&1 || rc=$?
  echo "prove-e2e: go test exit $rc after $(($(date +%s) - t0))s" >&2
  grep -E -e "--- (PASS|FAIL|SKIP): TestGuardsFullMode" "$log" | sed 's/^ */prove-e2e:   /' >&2 || true
  if ! grep -q -e "--- PASS: TestGuardsFullMode/after_review" "$log"; then
    echo INCONCLUSIVE
  elif grep -q -e "--- PASS: $scenario" "$log"; then
    echo PASS
  elif grep -q -e "--- FAIL: $scenario" "$log" && grep -E "$expect" "$log" >/dev/null; then
    echo FAIL
  else
    echo INCONCLUSIVE
  fi
}

if [ "$control" = 1 ]; then
  # The control: the same subtests on the unbroken build must pass, or a failure below would
  # prove nothing about the patch.
  echo "prove-e2e: control: $(git rev-parse --short=12 "$rev") as it is"
  got=$(run_scenario "$log.control")
  if [ "$got" != PASS ]; then
    echo "prove-e2e: INCONCLUSIVE: the unbroken build does not pass the scenario ($got); see $log.control" >&2
    exit 2
  fi
fi

if ! (cd "$tree" && git apply --check "$patch"); then
  echo "prove-e2e: $patch does not apply to $rev: update it to break the same guard" >&2
  exit 2
fi
(cd "$tree" && git apply "$patch")
echo "prove-e2e: $(git rev-parse --short=12 "$rev") with $patch applied, in $tree"
(cd "$tree" && go build -o /dev/null ./cmd/git-corral) || { echo "prove-e2e: the broken build does not compile" >&2; exit 2; }
got=$(run_scenario "$log")
case $got in
PASS)
  echo "prove-e2e: FAILED PROOF: the gitshadow scenario passed with the shadow broken: it does not test what it says" >&2
  exit 1 ;;
FAIL)
  echo "prove-e2e: the gitshadow scenario failed as it must, with:"
  grep -E "$expect" "$log" | sed 's/^ */  /'
  exit 0 ;;
*)
  echo "prove-e2e: INCONCLUSIVE: the box never ran an approved session, or the scenario failed without a guard message; see $log" >&2
  exit 2 ;;
esac
