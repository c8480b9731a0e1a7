#!/usr/bin/env bash
# sandbox-bench.sh — the light tier's start-up cost, side by side (issue 22):
#   true                          the command alone
#   bwrap ... true                bare bubblewrap with the namespaces and system mounts the
#                                 sandbox uses, nothing else
#   bwrap --unshare-all --ro-bind / / true   issue #30's form of bare bubblewrap
#   git corral sandbox -h         what any command but a sandbox run pays before its own work:
#                                 the front on PATH, then the full binary it execs (beside it,
#                                 git-corral-full sandbox -h: the full binary started directly,
#                                 so the difference is the front's exec)
#   git corral version            that, and `limactl --version` (a second Go program's start)
#   git corral sandbox -- true    the whole light tier, run by the front: manifest, checks,
#                                 seccomp, bubblewrap,
#                                 the exec step (git-corral-sandbox), Landlock, log; outside a
#                                 checkout, and in one (-C: git rev-parse and the configuration
#                                 are read, for the repository's [sandbox] table)
#   ... --manifest limits.toml    with limits.scratch set, so the init step runs too
# With --before REV, git-corral and git-corral-sandbox are also built from REV (git archive,
# the same way) and its `sandbox -h`, `version` and `sandbox -- true` run in the same hyperfine
# run, so the two builds meet the same load.
# Medians of RUNS runs (default 40, after 5 warm-ups) with hyperfine, printed as a Markdown table
# with the ratios to bare bubblewrap and the CPU time (user+system, mean) of each; then the
# package initialisers' cost (GODEBUG=inittrace=1, the sum of every package's clock, bytes and
# allocations; median of 10 starts of `git corral version`) of each build.
# Usage: bench/sandbox-bench.sh [--before REV] [RUNS]   (needs bwrap, hyperfine, python3, go)
set -euo pipefail
before=
if [ "${1:-}" = --before ]; then before=$2; shift 2; fi
runs=${1:-40}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build() { # build SRC DIR: the binaries of the tree at SRC into DIR, as its Makefile builds them
  if grep -q '^BINDIR' "$1/Makefile"; then make -s -C "$1" build BINDIR="$2" >&2
  else (cd "$1" && go build -o "$2/git-corral" ./cmd/git-corral && go build -o "$2/git-corral-sandbox" ./cmd/git-corral-sandbox); fi
}
build "$root" "$work/after"
extra=()
if [ -n "$before" ]; then
  mkdir "$work/src" && git -C "$root" archive "$before" | tar -x -C "$work/src"
  build "$work/src" "$work/before"
  extra=(-n "git corral sandbox -h (before, $before)" "$work/before/git-corral sandbox -h"
    -n "git corral version (before, $before)" "$work/before/git-corral version"
    -n "git corral sandbox -- true (before, $before)" "$work/before/git-corral sandbox -- true")
fi
gc=$work/after/git-corral
export CORRAL_HOME="$work/corral"
mkdir "$work/out" && git init -q "$work/repo"
printf '[limits]\nscratch = "256MiB"\n' >"$work/limits.toml"
cd "$work/out"
links=()
for l in /bin /sbin /lib /lib32 /lib64 /libx32; do
  if [ -L "$l" ]; then links+=(--symlink "$(readlink "$l")" "$l"); elif [ -d "$l" ]; then links+=(--ro-bind "$l" "$l"); fi
done
bare="bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session --clearenv --ro-bind /usr /usr ${links[*]} --proc /proc --dev /dev --tmpfs /tmp true"
echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores, $(uname -r)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
full=()
if [ -x "$work/after/git-corral-full" ]; then
  full=(-n "git-corral-full sandbox -h (the full binary, no front)" "$work/after/git-corral-full sandbox -h")
fi
cmds=(-n true true -n bwrap "$bare" -n "bwrap --unshare-all --ro-bind / / true" "bwrap --unshare-all --ro-bind / / true"
  -n "git corral sandbox -h" "$gc sandbox -h" "${full[@]}"
  -n "git corral version" "$gc version"
  -n "git corral sandbox -- true" "$gc sandbox -- true"
  "${extra[@]}"
  -n "git corral -C CHECKOUT sandbox -- true" "$gc -C $work/repo sandbox -- true"
  -n "git corral sandbox --manifest limits.toml -- true" "$gc sandbox --manifest $work/limits.toml -- true")
hyperfine -N -w 5 -r "$runs" --export-json "$work/out.json" "${cmds[@]}" >&2
# The table, then one bench-row line (bench/result.sh) per command against bare bubblewrap;
# the light tier's goal (issue #30): `sandbox -- true` within bubblewrap + 30 ms.
python3 - "$work/out.json" "$runs" "${cmds[@]}" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
runs, rest = sys.argv[2], sys.argv[3:]
argv = dict(zip(rest[1::3], rest[2::3]))
bw = res["bwrap"]["median"]
print("| command | median | vs bare bubblewrap | CPU (user+sys, mean) |")
print("|---|---|---|---|")
for name, r in res.items():
    print(f"| `{name}` | {r['median']*1000:.1f} ms | {r['median']/bw:.2f}x ({(r['median']-bw)*1000:+.1f} ms) | {(r['user']+r['system'])*1000:.1f} ms |")
for name, r in res.items():
    if name == "bwrap":
        continue
    target = "delta<=30" if name == "git corral sandbox -- true" else "-"
    print("\t".join(["bench-row", "sandbox", name, argv[name], f"{r['median']*1000:.1f}", "bare bubblewrap",
                     argv["bwrap"], f"{bw*1000:.1f}", "ms", runs, "-", target]))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "this tree" "$work"/after/git-corral ${before:+"before, $before" "$work"/before/git-corral} <<'PY'
import os, re, statistics, subprocess, sys
line = re.compile(r"^init \S+ @\S+ ms, (\S+) ms clock, (\d+) bytes, (\d+) allocs")
print("| build | package initialisers: clock (median of 10, min) | bytes | allocations |")
print("|---|---|---|---|")
for name, exe in zip(sys.argv[1::2], sys.argv[2::2]):
    tot = []
    for _ in range(10):
        p = subprocess.run([exe, "version"], env=dict(os.environ, GODEBUG="inittrace=1"), capture_output=True, text=True)
        ms = [tuple(map(float, m.groups())) for m in map(line.match, p.stderr.splitlines()) if m]
        tot.append(tuple(map(sum, zip(*ms))))
    med = lambda i: statistics.median(t[i] for t in tot)
    print(f"| {name} | {med(0):.1f} ms ({min(t[0] for t in tot):.1f}) | {med(1)/1e6:.2f} MB | {med(2):.0f} |")
PY
