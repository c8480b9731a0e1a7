#!/usr/bin/env bash
# sandbox-bench.sh — the light tier's start-up cost, side by side (issue 22):
#   true                          the command alone
#   bwrap ... true                bare bubblewrap with the namespaces and system mounts the
#                                 sandbox uses, nothing else
#   git corral version            git corral's own start (what any git corral command pays)
#   git corral sandbox -- true    the whole light tier: manifest, checks, seccomp, bubblewrap,
#                                 the exec step (git-corral-sandbox), Landlock, log; outside a
#                                 checkout, and in one (-C: git rev-parse and the configuration
#                                 are read, for the repository's [sandbox] table)
#   ... --manifest limits.toml    with limits.scratch set, so the init step runs too
# Medians of RUNS runs (default 40, after 5 warm-ups) with hyperfine, printed as a Markdown table
# with the ratios to bare bubblewrap and the CPU time (user+system, mean) of each.
# Usage: bench/sandbox-bench.sh [RUNS]   (needs bwrap, hyperfine, python3, go)
set -euo pipefail
runs=${1:-40}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/git-corral" ./cmd/git-corral && go build -o "$work/git-corral-sandbox" ./cmd/git-corral-sandbox)
export CORRAL_HOME="$work/corral"
mkdir "$work/out" && git init -q "$work/repo"
printf '[limits]\nscratch = "256MiB"\n' >"$work/limits.toml"
cd "$work/out"
links=()
for l in /bin /sbin /lib /lib32 /lib64 /libx32; do
  if [ -L "$l" ]; then links+=(--symlink "$(readlink "$l")" "$l"); elif [ -d "$l" ]; then links+=(--ro-bind "$l" "$l"); fi
done
bare="bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session --clearenv --ro-bind /usr /usr ${links[*]} --proc /proc --dev /dev --tmpfs /tmp true"
hyperfine -N -w 5 -r "$runs" --export-json "$work/out.json" \
  -n true true -n bwrap "$bare" -n "git corral version" "$work/git-corral version" \
  -n "git corral sandbox -- true" "$work/git-corral sandbox -- true" \
  -n "git corral -C CHECKOUT sandbox -- true" "$work/git-corral -C $work/repo sandbox -- true" \
  -n "git corral sandbox --manifest limits.toml -- true" "$work/git-corral sandbox --manifest $work/limits.toml -- true" >&2
python3 - "$work/out.json" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
bw = res["bwrap"]["median"]
print("| command | median | vs bare bubblewrap | CPU (user+sys, mean) |")
print("|---|---|---|---|")
for name, r in res.items():
    print(f"| `{name}` | {r['median']*1000:.1f} ms | {r['median']/bw:.2f}x ({(r['median']-bw)*1000:+.1f} ms) | {(r['user']+r['system'])*1000:.1f} ms |")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
