#!/usr/bin/env bash
# The warm path (issue #30, point 5; docs/benchmarks-history.md "## vm"): one short command on a
# running box of the quick start's kind (mount mode, network "full", golden on, the agent
# mounts every mount-mode box has) as git corral runs it, side by side with plain
# `ssh -F <Lima's ssh.config> lima-BOX true` through Lima's own ControlMaster to the same box.
# As root, from the repository's root; the product and limactl run as $CORRAL_USER (bench/lib.sh).
#   1. hyperfine -N, WARMUP warm-ups and RUNS runs of each command, one after the other;
#   2. RUNS interleaved rounds (each command once per round, the order rotating), so a change
#      of load hits every command alike: medians and the median of the per-round ratios;
#   3. TRACES runs with CORRAL_TRACE=1: the median of each step (where the time goes).
# BEFORE=REV also builds git corral at REV (a commit of this repository; for a branch, its
# merge base with main) and measures it on the same box beside the working tree's build: a
# before/after in one run (the box's connection holder is the working tree's in both). The box, and the golden
# base it resumes from, are made on first use ($BASE/home) and deleted at the end (KEEP=1
# keeps them for a second run). Needs: scripts/setup.sh done, hyperfine, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-15}
WARMUP=${WARMUP:-3}
TRACES=${TRACES:-9}
BASE=${BASE:-/var/tmp/corral-bench-warm}
# shellcheck source=bench/lib.sh
. bench/lib.sh
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo "+dirty")
if [ -n "${BEFORE:-}" ]; then
  before=$(git rev-parse --short "$BEFORE^{commit}")
  rm -rf "${BASE:?}/src-before" && mkdir -p "$BASE/src-before"
  git archive "$before" | tar -x -C "$BASE/src-before"
  (cd "$BASE/src-before" && go build -o "$BASE/bin/git-corral-before" ./cmd/git-corral)
  chmod 755 "$BASE/bin/git-corral-before"
fi

install -d -o "$CORRAL_USER" "$BASE/home" "$BASE/proj"
if [ ! -d "$BASE/proj/.git" ]; then
  U git -C "$BASE/proj" init -q
  printf 'all:\n\t@echo built\n' | U tee "$BASE/proj/Makefile" >/dev/null
  U git -C "$BASE/proj" add Makefile
  U git -C "$BASE/proj" -c user.name=bench -c user.email=bench@corral.invalid commit -qm bench
fi
cleanup() {
  [ "${KEEP:-}" = 1 ] && return
  U "$GC" -C "$BASE/proj" delete --yes >/dev/null 2>&1 || true # also ends its connection holder
  rm -rf "${BASE:?}/home" # the golden base with it
}
trap cleanup EXIT
t=$(now); U "$GC" -C "$BASE/proj" run --yes -- true 2>/dev/null
echo "box ready (or already running) in $(since "$t")s"
BOX=$(U "$GC" -C "$BASE/proj" info --json | sed -n 's/.*"box": "\(.*\)".*/\1/p')
CFG=$BASE/home/lima/$BOX/ssh.config
U ssh -F "$CFG" "lima-$BOX" true # Lima's ControlMaster up before the first measured run

cmds=(-n "ssh -F ssh.config true" "ssh -F $CFG lima-$BOX true"
  -n "git corral run -- true" "$GC -C $BASE/proj run -- true")
if [ -n "${BEFORE:-}" ]; then
  cmds+=(-n "git corral run -- true at $before" "$BASE/bin/git-corral-before -C $BASE/proj run -- true")
fi
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "machine: $cpu; $(nproc) cores; kernel $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "commit: $commit${BEFORE:+ (before: $before)}; box $BOX (network full, golden); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
U hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$BASE/home/warm.json" "${cmds[@]}" 2>&1 | grep -v '^ *$'

# Interleaved rounds, and the traced runs: each command as its own process, timed from here.
U env CORRAL_BENCH_TRACES="$TRACES" python3 - "$RUNS" "$BASE/home/warm.json" "${cmds[@]}" <<'PY'
import json, os, statistics, subprocess, sys, time
runs, hyper, rest = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
names, argvs = rest[1::3], [c.split() for c in rest[2::3]]
def med(xs): return statistics.median(xs) * 1000
m = {r["command"]: r["median"] for r in json.load(open(hyper))["results"]}
for n in names:
    print(f"RESULT hyperfine median {n}: {m[n]*1000:.0f} ms ({m[n]/m[names[0]]:.2f}x plain ssh)")
times = {n: [] for n in names}
for i in range(runs):
    order = names[i % len(names):] + names[:i % len(names)]
    for n in order:
        t = time.perf_counter()
        subprocess.run(argvs[names.index(n)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times[n].append(time.perf_counter() - t)
for n in names:
    ratio = statistics.median(a / b for a, b in zip(times[n], times[names[0]]))
    print(f"RESULT interleaved median of {runs} rounds {n}: {med(times[n]):.0f} ms "
          f"(median of the rounds' ratios {ratio:.2f}x plain ssh; min {min(times[n])*1000:.0f}, max {max(times[n])*1000:.0f})")
    if n != names[0]:  # the common line of bench/result.sh; the goal of issue #30: 1.25x plain ssh
        print("\t".join(["bench-row", "warm", n, " ".join(argvs[names.index(n)]), f"{med(times[n]):.0f}",
                         names[0], " ".join(argvs[0]), f"{med(times[names[0]]):.0f}", "ms",
                         f"{runs} rounds", f"{ratio:.2f}", "ratio<=1.25" if n == names[1] else "-"]))
steps = {}
env = dict(os.environ, CORRAL_TRACE="1")
for i in range(int(os.environ["CORRAL_BENCH_TRACES"])):
    p = subprocess.run(argvs[1], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    for line in p.stderr.splitlines():
        f = line.split(None, 6)  # corral: trace: START ms DURATION ms STEP
        if len(f) == 7 and f[1] == "trace:":
            steps.setdefault(f[6], []).append((float(f[2]), float(f[4])))
for s, v in sorted(steps.items(), key=lambda kv: statistics.median(x[0] for x in kv[1])):
    print(f"TRACE {s}: starts at {statistics.median(x[0] for x in v):.1f} ms, takes {statistics.median(x[1] for x in v):.1f} ms (median of {len(v)})")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
