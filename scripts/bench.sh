#!/usr/bin/env bash
# scripts/bench.sh — `make bench`: every benchmark that docs/BENCHMARKS.md quotes, each beside its
# baseline in the same run, into one log (bench/results/bench-<UTC time>.log) with the date,
# commit, machine and the load average at the start and end of each benchmark; then the
# generated section of docs/BENCHMARKS.md is rewritten from that log (internal/benchreport).
# No figure in that section is typed by hand.
#
#   make bench                          # everything (boots boxes: needs scripts/setup.sh done)
#   BENCH=sandbox,broker make bench     # a subset; the others are named as not run
#   scripts/bench.sh --no-box           # every benchmark that boots no box
#   scripts/bench.sh --list             # the benchmarks, what each compares, how it runs
#   scripts/bench.sh --dry-run          # what would run, prerequisites and syntax checked; runs nothing
#   scripts/bench.sh --no-doc           # the log only; docs/BENCHMARKS.md left as it is
#
# As root (the box benchmarks run git corral as $CORRAL_USER, default corral-ci; vm-session
# starts an sshd). Each benchmark's result lines are bench/result.sh's bench-row lines.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

# The benchmarks: name, kind (host: boots nothing; box: boots boxes; manual: needs something
# make bench cannot provide, so it is always named as not run, with the command to run it),
# what is compared with what, and the command.
NAMES=(sandbox broker diff gitshadow vm-session clone-host warm golden boot clone-box boxdirs image-boot agent-start agents-install)
declare -A KIND=(
  [sandbox]=host [broker]=host [diff]=host [gitshadow]=host [vm-session]=host [clone-host]=host
  [warm]=box [golden]=box [boot]=box [clone-box]=box
  [boxdirs]=manual [image-boot]=manual [agent-start]=manual [agents-install]=manual)
declare -A WHAT=(
  [sandbox]="git corral sandbox -- true (the light tier) vs bare bubblewrap; goal: bubblewrap + 30 ms"
  [broker]="git corral broker vs direct TCP, a plain Go relay, squid and tinyproxy on loopback: throughput, connect latency, RSS"
  [diff]="git corral diff vs git status --porcelain on 100,000 files; goal: 2x"
  [gitshadow]="git corral shadow --json vs git submodule status, 1,000 initialised submodules; goal: 0.5 s"
  [vm-session]="git corral's SSH client vs ssh (fresh, and warm ControlMaster) to a loopback sshd"
  [clone-host]="clone.Fetch + clone.Deliver vs git clone --bare / git clone, 50 MB over loopback TLS, no box"
  [warm]="git corral run -- true on a warm box vs plain ssh -F ssh.config to it; goal: 1.25x"
  [golden]="second box from a golden base vs a box from scratch, with the phases of both; goal: 15 s and 0.2x"
  [boot]="box creation to ready vs a raw limactl start of the same template; goal: 1.1x"
  [clone-box]="git corral clone path vs git clone inside the same box, 50 MB"
  [boxdirs]="file-heavy install on the 9p project mount vs box_dirs (needs a project with box_dirs = [\"node_modules\"] and its box)"
  [image-boot]="box boot with an older base image vs the current one (needs IMAGE_BOOT_OLD=<image hash> still in the image store)"
  [agent-start]="git corral start to the agent's first output vs run -- true (installs an agent from the npm registry)"
  [agents-install]="git corral agents install, cold and cached (downloads agents from the npm registry)")
declare -A CMD=(
  [sandbox]="bash bench/sandbox-bench.sh \${SANDBOX_RUNS:-40}"
  [broker]="bash bench/broker.sh"
  [diff]="RUNS=\${DIFF_RUNS:-10} bash bench/diff/run.sh \$BENCH_WORK/diff"
  [gitshadow]="(in this script) sh gitshadow/testdata/many.sh -i 1000; hyperfine shadow --json (20 runs) and git submodule status (\${SUBMODULE_RUNS:-1} runs)"
  [vm-session]="sh bench/vm-session.sh 7 10"
  [clone-host]="CORRAL_BENCH=1 go test -count=1 -run TestMeasureClone50MB -v ./clone"
  [warm]="bash bench/warm-run.sh"
  [golden]="PAIRS=\${PAIRS:-2} bash bench/golden-bench.sh"
  [boot]="BOOTS=\${BOOTS:-2} RUNS=5 bash bench/vm-bench.sh"
  [clone-box]="CORRAL_E2E=1 CORRAL_BENCH_CLONE=1 CORRAL_BENCH_RUNS=5 go test -count=1 -timeout 45m -v -run TestCloneBox ./e2e/"
  [boxdirs]="bench/boxdirs.sh (as the box's user, in a project with box_dirs)"
  [image-boot]="bash bench/image-boot.sh \$IMAGE_BOOT_OLD"
  [agent-start]="bash bench/agent-start.sh"
  [agents-install]="bash bench/agents-install.sh")
LIMA=/usr/local/lib/git-corral/lima/bin/limactl # make lima, scripts/setup.sh
declare -A NEEDS=(
  [sandbox]="bwrap hyperfine python3 go" [broker]="go squid tinyproxy" [diff]="hyperfine python3 go git"
  [gitshadow]="hyperfine git go" [vm-session]="go sshd ssh" [clone-host]="go git"
  [warm]="hyperfine python3 go ssh runuser $LIMA" [golden]="go bc runuser $LIMA" [boot]="hyperfine go runuser $LIMA" [clone-box]="go runuser $LIMA"
  [boxdirs]="" [image-boot]="" [agent-start]="npm" [agents-install]="npm")

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
list=0 dry=0 nobox=0 nodoc=0
for a in "$@"; do
  case $a in
  --list) list=1 ;;
  --dry-run) dry=1 ;;
  --no-box) nobox=1 ;;
  --no-doc) nodoc=1 ;;
  -h | --help) usage; exit 0 ;;
  *) echo "bench: error: unknown option \"$a\"" >&2; echo "bench: hint: scripts/bench.sh --help" >&2; exit 2 ;;
  esac
done
selected=" "
if [ -n "${BENCH:-}" ]; then
  IFS=, read -ra want <<<"$BENCH"
  for w in "${want[@]}"; do
    [ -n "${KIND[$w]:-}" ] || { echo "bench: error: BENCH names \"$w\", which is not a benchmark; the benchmarks: ${NAMES[*]}" >&2; exit 2; }
    selected+="$w "
  done
fi

# why_not NAME: empty when NAME runs in this invocation, else why it does not.
why_not() {
  local n=$1
  if [ -n "${BENCH:-}" ] && [[ $selected != *" $n "* ]]; then
    echo "not selected (BENCH=$BENCH)"; return
  fi
  case ${KIND[$n]} in
  box) [ "$nobox" = 0 ] || echo "--no-box: it boots boxes; run make bench without --no-box when the machine is free" ;;
  manual) echo "manual, make bench cannot set it up: ${WHAT[$n]}; run: ${CMD[$n]}" ;;
  esac
}

if [ "$list" = 1 ]; then
  for n in "${NAMES[@]}"; do
    w=$(why_not "$n")
    printf '%-15s %-6s %s\n%15s %-6s %s\n%15s %-6s %s\n' "$n" "${KIND[$n]}" "${WHAT[$n]}" "" "" "run: ${CMD[$n]}" "" "" "${w:-selected}"
  done
  exit 0
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
tab() { local IFS=$'\t'; printf '%s\n' "$*"; }
header() {
  local commit
  commit=$(git rev-parse --short=12 HEAD)
  [ -z "$(git status --porcelain --untracked-files=no)" ] || commit+="-dirty"
  tab bench-header date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  tab bench-header commit "$commit"
  tab bench-header cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  tab bench-header cores "$(nproc)"
  tab bench-header memory "$(awk '/^MemTotal:/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
  tab bench-header kernel "$(uname -r)"
  tab bench-header command "${BENCH:+BENCH=$BENCH }scripts/bench.sh$args"
}
args=""
for a in "$@"; do args+=" $a"; done

if [ "$dry" = 1 ]; then
  header
  bad=0
  for n in "${NAMES[@]}"; do
    w=$(why_not "$n")
    if [ -n "$w" ]; then tab bench-skip "$n" "$w"; continue; fi
    missing=""
    for t in ${NEEDS[$n]}; do command -v "$t" >/dev/null || missing+=" $t"; done
    if [ "${KIND[$n]}" = box ] && ! id "${CORRAL_USER:-corral-ci}" >/dev/null 2>&1; then missing+=" user ${CORRAL_USER:-corral-ci}"; fi
    echo "would run $n: ${CMD[$n]}${missing:+  (MISSING:$missing)}"
    [ -z "$missing" ] || bad=1
  done
  for f in bench/*.sh bench/diff/*.sh scripts/bench.sh; do
    bash -n "$f" || { echo "syntax error in $f"; bad=1; }
    # The Python the scripts run from here-documents, compiled (not run).
    awk -v f="$f" '/<<.PY.$/ {on = 1; n++; next} /^PY$/ {on = 0} on {print > (out "." n)}' out="/tmp/bench-py.$$" "$f"
    for p in "/tmp/bench-py.$$".*; do
      [ -e "$p" ] || continue
      python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[2], "exec")' "$p" "$f: a python here-document" || { echo "python error in $f"; bad=1; }
      rm -f "$p"
    done
  done
  if command -v shellcheck >/dev/null; then shellcheck -x bench/*.sh bench/diff/*.sh scripts/bench.sh || bad=1; fi
  exit "$bad"
fi

[ "$(id -u)" = 0 ] || { echo "bench: error: run as root (the box benchmarks switch to \$CORRAL_USER, vm-session starts an sshd)" >&2; exit 2; }
mkdir -p bench/results
stamp=$(date -u +%Y%m%dT%H%MZ)
log=bench/results/bench-$stamp.log
BENCH_WORK=$(mktemp -d /var/tmp/corral-bench-all.XXXXXX)
trap 'rm -rf "$BENCH_WORK"' EXIT
export BENCH_WORK

# The benchmarks that have no script of their own.
run_gitshadow() {
  local fx=$BENCH_WORK/many
  (export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e \
    GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
  sh gitshadow/testdata/many.sh -i 1000 "$fx" >"$BENCH_WORK/many.log" 2>&1) || { tail -20 "$BENCH_WORK/many.log"; return 1; }
  go build -o "$BENCH_WORK/git-corral" ./cmd/git-corral
  (cd "$fx/top" && HOME=$BENCH_WORK CORRAL_HOME=$BENCH_WORK/corral GIT_CONFIG_NOSYSTEM=1 \
    hyperfine -N -w 2 -r 20 --export-json "$BENCH_WORK/shadow.json" -n "git corral shadow --json" "$BENCH_WORK/git-corral shadow --json" &&
    GIT_CONFIG_NOSYSTEM=1 hyperfine -N -w 0 -r "${SUBMODULE_RUNS:-1}" --export-json "$BENCH_WORK/sub.json" -n "git submodule status" "git submodule status")
  python3 - "$BENCH_WORK/shadow.json" "$BENCH_WORK/sub.json" "${SUBMODULE_RUNS:-1}" <<'PY'
import json, sys
a, b = (json.load(open(f))["results"][0] for f in sys.argv[1:3])
print("\t".join(["bench-row", "gitshadow", "git corral shadow --json, 1,000 initialised submodules", "git corral shadow --json",
                 "%.0f" % (a["median"] * 1000), "git submodule status", "git submodule status", "%.0f" % (b["median"] * 1000),
                 "ms", "20/" + sys.argv[3], "-", "median<=500"]))
PY
}
# go_times: the Go test logs of clone's measurements as bench-row lines (Go durations to ms).
go_rows() {
  python3 -c '
import re, sys
def ms(d):
    t = 0.0
    for n, u in re.findall(r"([0-9.]+)(ns|µs|us|ms|s|m|h)", d):
        t += float(n) * {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1, "s": 1e3, "m": 6e4, "h": 3.6e6}[u]
    return "%.0f" % t
text = sys.stdin.read()
sys.stdout.write(text)
def row(*f): print("\t".join(("bench-row",) + f))
m = re.search(r"median of (\d+): clone.Fetch \(go-git \+ validation, host\) (\S+); git clone --bare \(host\) (\S+)", text)
if m:
    row("clone-host", "clone.Fetch (go-git, every check)", "clone.Fetch", ms(m[2]), "git clone --bare", "git clone --bare", ms(m[3]), "ms", m[1], "-", "-")
m2 = re.search(r"median of (\d+): clone.Deliver into sandbox guest (\S+); Fetch\+Deliver (\S+); git clone inside the sandbox guest (\S+)", text)
if m2:
    row("clone-host", "clone.Fetch + clone.Deliver (the clone path up to the box)", "-", ms(m2[3]), "git clone in the sandbox guest", "git clone", ms(m2[4]), "ms", m2[1], "-", "-")
m = re.search(r"clone 50 MB: git corral clone path median (\S+) \[.*?\]; git clone in box median (\S+) \[.*?\]; git corral run -- true median (\S+)", text)
if m:
    row("clone-box", "git corral clone path, 50 MB", "clone.Fetch + clone.Deliver over SSH", ms(m[1]), "git clone in the box", "git clone git://host/big", ms(m[2]), "ms", sys.argv[1], "-", "-")
'  "$@"
}
run_clone-host() { CORRAL_BENCH=1 go test -count=1 -run TestMeasureClone50MB -v ./clone 2>&1 | go_rows 5; }
run_clone-box() {
  CORRAL_E2E=1 CORRAL_E2E_BASE=/var/tmp/corral-e2e-clonebox CORRAL_BENCH_CLONE=1 CORRAL_BENCH_RUNS=5 \
    go test -count=1 -timeout 45m -v -run TestCloneBox ./e2e/ 2>&1 | go_rows 5
}
run_sandbox() { bash bench/sandbox-bench.sh "${SANDBOX_RUNS:-40}"; }
run_broker() { bash bench/broker.sh; }
run_diff() { RUNS=${DIFF_RUNS:-10} bash bench/diff/run.sh "$BENCH_WORK/diff"; }
run_vm-session() { sh bench/vm-session.sh 7 10; }
run_warm() { bash bench/warm-run.sh; }
run_golden() { PAIRS=${PAIRS:-2} bash bench/golden-bench.sh; }
run_boot() { BOOTS=${BOOTS:-2} RUNS=5 bash bench/vm-bench.sh; }

{
  header
  for n in "${NAMES[@]}"; do
    w=$(why_not "$n")
    if [ -n "$w" ]; then tab bench-skip "$n" "$w"; continue; fi
    tab bench-start "$n" "$(date -u +%H:%M:%SZ)" "$(load)"
    set +e
    (set -eo pipefail; "run_$n") 2>&1
    rc=$?
    set -e
    tab bench-end "$n" "$(date -u +%H:%M:%SZ)" "$(load)" "$rc"
  done
} 2>&1 | tee "$log"
echo "bench: the log is $log"
if [ "$nodoc" = 0 ]; then
  go run ./internal/benchreport/genbench "$log" docs/BENCHMARKS.md
  echo "bench: docs/BENCHMARKS.md's generated section is rewritten from it; commit both"
fi
