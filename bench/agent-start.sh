#!/usr/bin/env bash
# bench/agent-start.sh — the agent figures of docs/benchmarks-history.md "## agents" that need a box
# (issue 23), side by side in one run, as root; git corral runs as the unprivileged user
# $CORRAL_USER (limactl refuses root):
#   1. on a box that already exists and runs, `git corral start` with default_agent =
#      "AGENT --version" (the agent's first output is its version, and it exits right after it,
#      so the command's time is the time to the first output) beside `git corral run -- true`
#      and `git corral run -- AGENT --version`, and the light tier's `git corral sandbox --
#      true` for contrast with a box (issue 22) (hyperfine);
#   2. the golden base's disk and saved state, and a second project's box from it (create to
#      ready), with AGENT installed in the store (part 1's CORRAL_HOME) and without (a fresh
#      one); the store is a read-only mount, so the base should not grow: this measures it
#      rather than say so.
# Every box it starts is stopped and deleted on exit. Needs: scripts/setup.sh done, hyperfine,
# npm (AGENT is installed from the npm registry with the ordinary npm client).
#
#   bash bench/agent-start.sh            # claude, 10 runs
#   AGENT=codex RUNS=5 bash bench/agent-start.sh
set -euo pipefail
cd "$(dirname "$0")/.."
AGENT=${AGENT:-claude}
RUNS=${RUNS:-10}
GOLDEN=${GOLDEN:-1}   # 0 skips part 2 (another golden base and three more boxes)
BASE=/var/tmp/corral-bench-agent
# shellcheck source=bench/lib.sh
. bench/lib.sh

# fresh HOME: an empty CORRAL_HOME with default_agent set, and a project in it.
fresh() {
  cleanup
  rm -rf "${BASE:?}/home" "${BASE:?}/proj" "${BASE:?}/proj2"
  install -d -o "$CORRAL_USER" "$BASE/home" "$BASE/proj" "$BASE/proj2"
  printf 'default_agent = "%s --version"\n' "$AGENT" | install -o "$CORRAL_USER" -m 600 /dev/stdin "$BASE/home/config.toml"
  for p in proj proj2; do U sh -c "cd $BASE/$p && git init -q . && echo bench > README"; done
}
boxes() { U "$LIMACTL" --tty=false list --format '{{.Name}}' 2>/dev/null || true; }
cleanup() {
  [ -d "$BASE/home/lima" ] || return 0
  for b in $(boxes); do U "$LIMACTL" --tty=false delete --force "$b" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
echo "# $(date -u +%FT%TZ) agent $AGENT; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); git corral $(git rev-parse --short HEAD)"

# ---- 1. start to the agent's first output, on a box that exists ----------------------------
# KEEP_HOME=1 keeps the previous run's CORRAL_HOME (its store and golden base), deleting only
# its boxes: the install is then the "present" check and the box resumes the kept base.
if [ "${KEEP_HOME:-0}" = 1 ] && [ -d "$BASE/home/agents" ]; then
  cleanup
  how="store kept (KEEP_HOME=1)"
else
  fresh
  how="cold, fresh CORRAL_HOME"
fi
t=$(now); U "$GC" -C "$BASE/proj" agents install "$AGENT" >/dev/null
echo "RESULT agents install $AGENT ($how): $(since "$t")s"
t=$(now); U "$GC" -C "$BASE/proj" run --yes -- true 2>/dev/null
echo "RESULT box creation (run --yes -- true): $(since "$t")s"
U "$GC" -C "$BASE/proj" start --yes | head -3
U hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$BASE/home/start.json" \
  -n "git corral run -- true" "$GC -C $BASE/proj run -- true" \
  -n "git corral start ($AGENT --version)" "$GC -C $BASE/proj start" \
  -n "git corral run -- $AGENT --version" "$GC -C $BASE/proj run -- $AGENT --version" \
  -n "git corral sandbox -- true (the light tier, no VM)" "$GC -C $BASE/proj sandbox -- /bin/true" 2>&1 | grep -v '^ *$'
[ "$GOLDEN" = 1 ] || exit 0

# ---- 2. a golden base with and without the agent in the store -------------------------------
# size: the base's disk and saved state; resume: the second project's box (the first project's
# box built the base). "with" is the CORRAL_HOME of part 1; "without" a fresh one.
golden() { # variant
  local t dir
  U "$GC" -C "$BASE/proj" run --yes -- true >/dev/null 2>&1
  t=$(now); U "$GC" -C "$BASE/proj2" run --yes -- true 2>&1 >/dev/null | grep -E '^[0-9:]+ corral: ' | sed 's/^/  /'
  echo "RESULT $1: second box from the golden base, create to ready: $(since "$t")s"
  # The guest's side of that creation: from the resume to the box adapted, step by step.
  local box
  box=$(boxes | grep '^proj2-' | head -1)
  grep -a 'lima-init\[[0-9]*\]: \(corral\|gitshadow\)' "$BASE/home/lima/$box/serial.log" 2>/dev/null | sed 's/^/  guest /' || true
  dir=$(find "$BASE/home/golden" -name golden.qcow2 -printf '%h\n' | head -1)
  echo "RESULT $1: golden.qcow2 $(du -m --apparent-size "$dir/golden.qcow2" | cut -f1) MB, golden.state $(du -m --apparent-size "$dir/golden.state" | cut -f1) MB"
}
golden "with $AGENT in the store"
fresh
golden "without $AGENT in the store"
