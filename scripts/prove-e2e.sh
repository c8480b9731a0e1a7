#!/usr/bin/env bash
# Prove that the end-to-end suite tests what it says: build a copy of REV (default HEAD) with one
# guard deliberately broken by a one-line patch, run only that guard's scenarios of the suite
# against it on a real box, and require every one of them to FAIL with the guard's own message.
#
#   sudo CORRAL_E2E_BASE=/var/tmp/corral-e2e-prove scripts/prove-e2e.sh [--guard G] [--control] [REV]
#
# The guards (--guard, default shadow), each with its patch in e2e/testdata:
#   shadow    break-shadow.patch: the box is rendered without the git shadow, so nothing in the
#             guest keeps .git read-only, and without the host-side snapshot, watch and restore;
#             TestGuardsFullMode's planting scenario must fail.
#   lockdown  break-lockdown.patch: the rendered lockdown ruleset lets every packet leave (the
#             guard check still passes: it compares the live ruleset with the rendered one);
#             TestOfflineMode's ways-out scenario and its provision-script probe must fail.
#   broker    break-broker.patch: the broker allows every address destination (never a name, so
#             nothing outside is resolved or dialled); TestBrokerMode's refusal scenario must fail.
#
# --control first runs the same subtests on REV unchanged and requires them to pass (a second box,
# booted after the first is deleted), so that the failure is the patch's doing, not the machine's.
#
# Exit 0: every scenario failed as it must (the suite catches the broken guard).
# Exit 1: a scenario PASSED against the broken build: it does not test what it says.
# Exit 2: inconclusive (the patch does not apply, the build or a prerequisite subtest failed).
# The broken build exists only in a temporary directory that is removed on exit, and every box
# under the run's own CORRAL_E2E_BASE is stopped and deleted, whatever happens. The product has no
# switch that turns a guard off: breaking it takes a patch and a rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
control=0
guard=shadow
while [ $# -gt 0 ]; do
  case $1 in
  --control) control=1; shift ;;
  --guard) guard=${2:-}; shift 2 ;;
  --guard=*) guard=${1#--guard=}; shift ;;
  *) break ;;
  esac
done
# The revision is resolved once: the tree, the control and the messages all name the same commit
# even when the branch moves while the run takes its half hour.
rev=$(git rev-parse --verify "${1:-HEAD}^{commit}") || { echo "prove-e2e: no such revision '${1:-HEAD}'" >&2; exit 2; }
base=${CORRAL_E2E_BASE:-/var/tmp/corral-e2e-prove}
case $base in /*) ;; *) echo "prove-e2e: CORRAL_E2E_BASE must be an absolute path, got '$base'" >&2; exit 2 ;; esac
log=${PROVE_LOG:-/tmp/prove-e2e-$guard.log}
# Per guard: the subtests to run (the scenarios and what they stand on), the prerequisite that
# must pass even on the broken build (the box booted and ran a session), and each scenario with
# the guard's own message that must appear when it fails ("NAME|REGEX" lines).
case $guard in
shadow)
  # The box boots and runs only once its provision script is approved, so those two run first
  # (a run that never reaches the box would leave nothing planted to find).
  run='^TestGuardsFullMode$/^(an_unapproved_provision|after_review|hooks_and_config)'
  prereq='TestGuardsFullMode/after_review_--approve_it_runs,_as_the_box_user'
  scenarios='TestGuardsFullMode/hooks_and_config_the_box_plants_never_reach_the_host|the host.s git ran something the box planted|the pre-commit hook reached the host|core\.fsmonitor on the host = ' ;;
lockdown)
  run='^TestOfflineMode$/^(run_--yes|the_approved_provision|no_way_out)'
  prereq='TestOfflineMode/run_--yes_boots_an_offline_box'
  scenarios='TestOfflineMode/no_way_out,_no_way_to_root,_as_the_box_user|offline mode: .* got through
TestOfflineMode/the_approved_provision_script_ran_after_the_lockdown:_its_network_probe_was_refused|offline mode: the provision script.s network probe says .*, want tcp=closed' ;;
broker)
  run='^TestBrokerMode$/^(the_approved_provision|the_allowed_destination|anything_else)'
  prereq='TestBrokerMode/the_allowed_destination_answers_through_the_broker'
  scenarios='TestBrokerMode/anything_else_is_refused_by_the_broker,_and_logged|want a 403 with X-Corral from the broker' ;;
*) echo "prove-e2e: --guard must be shadow, lockdown or broker, got '$guard'" >&2; exit 2 ;;
esac
patch=e2e/testdata/break-$guard.patch
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
cleanup_box() {
  echo "prove-e2e: deleting leftover box $1" >&2
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$user" -- env HOME="$base/home" LIMA_HOME="$base/home/lima" "$limactl" --tty=false delete --force "$1" >/dev/null 2>&1 || true
  else
    LIMA_HOME="$base/home/lima" "$limactl" --tty=false delete --force "$1" >/dev/null 2>&1 || true
  fi
}
# shellcheck disable=SC2317
cleanup() {
  local b
  for b in $(boxes); do
    cleanup_box "$b"
  done
  rm -rf "$tree"
}
trap cleanup EXIT

# A plain copy of REV, not a registered git worktree: a killed run leaves nothing behind in the
# repository's metadata, and the build under test is exactly REV (plus the patch).
git archive --format=tar "$rev" | tar -x -C "$tree"
patch=$PWD/$patch

# run_scenarios LOG: the selected subtests of the tree's e2e suite on one real box; prints PASS
# (every scenario passed), FAIL (every scenario failed with its guard message), SOME-PASSED (the
# broken build passed at least one scenario) or INCONCLUSIVE.
run_scenarios() {
  local log=$1 rc t0 name expect failed=0 passed=0 total=0
  echo "prove-e2e: go test -run '$run' ./e2e/ (CORRAL_E2E_BASE=$base), log in $log" >&2
  t0=$(date +%s)
  rc=0
  (cd "$tree" && CORRAL_E2E=1 CORRAL_E2E_BASE=$base go test -count=1 -timeout 30m -v -run "$run" ./e2e/) >"$log" 2>&1 || rc=$?
  echo "prove-e2e: go test exit $rc after $(($(date +%s) - t0))s" >&2
  grep -E -e "--- (PASS|FAIL|SKIP): Test" "$log" | sed 's/^ */prove-e2e:   /' >&2 || true
  if ! grep -q -F -e "--- PASS: $prereq " "$log"; then
    echo INCONCLUSIVE
    return
  fi
  while IFS= read -r line; do
    name=${line%%|*} expect=${line#*|}
    total=$((total + 1))
    if grep -q -F -e "--- PASS: $name " "$log"; then
      passed=$((passed + 1))
    elif grep -q -F -e "--- FAIL: $name " "$log" && grep -E -e "$expect" "$log" >/dev/null; then
      failed=$((failed + 1))
    fi
  done <<<"$scenarios"
  if [ "$passed" = "$total" ]; then echo PASS
  elif [ "$failed" = "$total" ]; then echo FAIL
  elif [ "$passed" -gt 0 ]; then echo SOME-PASSED
  else echo INCONCLUSIVE
  fi
}

if [ "$control" = 1 ]; then
  # The control: the same subtests on the unbroken build must pass, or a failure below would
  # prove nothing about the patch.
  echo "prove-e2e: control ($guard): $(git rev-parse --short=12 "$rev") as it is"
  got=$(run_scenarios "$log.control")
  if [ "$got" != PASS ]; then
    echo "prove-e2e: INCONCLUSIVE: the unbroken build does not pass the $guard scenarios ($got); see $log.control" >&2
    exit 2
  fi
  for b in $(boxes); do # the broken build starts from no box, as the control did
    cleanup_box "$b"
  done
fi

if ! (cd "$tree" && git apply --check "$patch"); then
  echo "prove-e2e: $patch does not apply to $rev: update it to break the same guard" >&2
  exit 2
fi
(cd "$tree" && git apply "$patch")
echo "prove-e2e: $(git rev-parse --short=12 "$rev") with $patch applied, in $tree"
(cd "$tree" && go build -o /dev/null ./cmd/git-corral) || { echo "prove-e2e: the broken build does not compile" >&2; exit 2; }
got=$(run_scenarios "$log")
case $got in
PASS | SOME-PASSED)
  echo "prove-e2e: FAILED PROOF: with the $guard guard broken, a scenario passed: it does not test what it says" >&2
  exit 1 ;;
FAIL)
  echo "prove-e2e: every $guard scenario failed as it must, with:"
  while IFS= read -r line; do grep -E -e "${line#*|}" "$log" | sed 's/^ */  /'; done <<<"$scenarios"
  exit 0 ;;
*)
  echo "prove-e2e: INCONCLUSIVE: the box never ran a session, or a scenario failed without its guard message; see $log" >&2
  exit 2 ;;
esac
