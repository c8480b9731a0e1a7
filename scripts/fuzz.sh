#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the module for FUZZTIME each (default 20s), one after
# another with one worker (the machine's cores are shared), and stops at the first failure.
# A failing input is written by go test under PKG/testdata/fuzz/FuzzXxx/: commit it as a
# regression seed once the bug is fixed. The targets are found, not listed, so a new one runs too.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZPARALLEL=${FUZZPARALLEL:-1}
found=0
while IFS=: read -r file _ decl; do
	name=${decl#func }
	name=${name%%(*}
	pkg=./$(dirname "$file")
	found=$((found + 1))
	echo "fuzz: $pkg $name for $FUZZTIME"
	"$GO" test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 5s -parallel "$FUZZPARALLEL"
done < <(grep -rn --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*(f \*testing.F)' . | sed 's|^\./||' | sort)
if [ "$found" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz: $found targets, $FUZZTIME each: no failure"
