#!/usr/bin/env bash
# Write docs/E2E.md's record of the last whole run from the output of `make test` (the README's
# test command), never by hand:
#
#   make test 2>&1 | tee /var/tmp/make-test.log
#   bash scripts/e2e-record.sh /var/tmp/make-test.log
#
# It reads the lines scripts/test-suites.sh prints (run:, machine:, group, suite, total:, and the
# closing "N passed, N failed" line; a leading "> ", as `issues ci` quotes CI's output, is
# dropped) and replaces what lies between the markers
# "<!-- last-run:begin -->" and "<!-- last-run:end -->" in docs/E2E.md with a table of each
# group's result and wall time. A log without those lines (a run cut short) is refused, and the
# file is replaced whole (written beside it, then renamed), so nothing is left half-written.
set -euo pipefail
cd "$(dirname "$0")/.."
log=${1:?usage: scripts/e2e-record.sh MAKE-TEST-LOG}
doc=${E2E_DOC:-docs/E2E.md}
[ -r "$log" ] || { echo "e2e-record: cannot read $log" >&2; exit 1; }
plain=$(mktemp)
section=$(mktemp)
trap 'rm -f "$plain" "$section" "$doc.tmp"' EXIT
sed 's/^> \{0,1\}//' "$log" >"$plain"
# make test prints each suite's group and suite lines as the suite ends and again, all together,
# under "== test suites" at the end: read them from there when it is there, once.
summary=$(mktemp)
trap 'rm -f "$plain" "$section" "$summary" "$doc.tmp"' EXIT
if grep -q '^== test suites' "$plain"; then
  awk 'f; /^== test suites/{f=1}' "$plain" >"$summary"
else
  cp "$plain" "$summary"
fi
for want in '^run: ' '^machine: ' '^suite e2e ' '^total: ' '^[0-9]+ passed, [0-9]+ failed'; do
  grep -Eq "$want" "$plain" || { echo "e2e-record: $log has no line matching '$want': not the output of a whole make test" >&2; exit 1; }
done
if ! grep -q '<!-- last-run:begin -->' "$doc" || ! grep -q '<!-- last-run:end -->' "$doc"; then
  echo "e2e-record: $doc has no last-run markers" >&2
  exit 1
fi
{
  echo '<!-- last-run:begin -->'
  echo '<!-- Written by scripts/e2e-record.sh from the output of make test; do not edit by hand. -->'
  echo
  sed -n 's/^run: /- run: /p; s/^machine: /- machine: /p; s/^total: /- whole make test: /p' "$plain" | head -n 3
  grep -E '^[0-9]+ passed, [0-9]+ failed' "$plain" | tail -n 1 | sed 's/^/- result: /'
  echo
  echo '| suite | tests | passed | failed | skipped | wall time |'
  echo '|---|---|---|---|---|---|'
  awk '/^suite /{ r=$2; for(i=3;i<=NF;i++){ split($i,a,"="); v[a[1]]=a[2] } printf "| %s | %s | %s | %s | %s | %s |\n", r, v["tests"], v["passed"], v["failed"], v["skipped"], v["time"] }' "$summary"
  echo
  echo '| suite | group | result | wall time |'
  echo '|---|---|---|---|'
  awk '/^group /{ sub(/^time=/, "", $5); printf "| %s | `%s` | %s | %s |\n", $2, $3, $4, $5 }' "$summary"
  echo '<!-- last-run:end -->'
} >"$section"
awk -v sec="$section" '
  /<!-- last-run:begin -->/ { while ((getline l < sec) > 0) print l; skip = 1; next }
  /<!-- last-run:end -->/ { skip = 0; next }
  !skip' "$doc" >"$doc.tmp"
mv "$doc.tmp" "$doc"
echo "e2e-record: $doc: the run of $(sed -n 's/^run: //p' "$plain" | head -n 1)"
