#!/usr/bin/env bash
# bench/image-boot.sh — what the base image's package set costs a box's boot: box creation to
# ready (`git corral run --yes -- true`, golden = false, so every box boots from the image) with
# an OLD image beside the current recipe's, alternating, PAIRS pairs, one box at a time, each
# deleted before the next. As root; git corral runs as $CORRAL_USER (limactl refuses root).
#
#   bash bench/image-boot.sh OLD_IMAGE_HASH     # e.g. ca273c0419baff18 (git corral image list)
#   PAIRS=3 bash bench/image-boot.sh OLD_IMAGE_HASH
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: bench/image-boot.sh OLD_IMAGE_HASH}
PAIRS=${PAIRS:-2}
BASE=/var/tmp/corral-bench-image
# shellcheck source=bench/lib.sh
. bench/lib.sh
cleanup() {
  U "$GC" -C "$BASE/proj" delete --yes >/dev/null 2>&1 || true
  for b in $(U "$LIMACTL" --tty=false list --format '{{.Name}}' 2>/dev/null || true); do
    U "$LIMACTL" --tty=false delete --force "$b" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
rm -rf "${BASE:?}/home" "${BASE:?}/proj"
install -d -o "$CORRAL_USER" "$BASE/home" "$BASE/proj"
U sh -c "cd $BASE/proj && git init -q . && echo bench > README"
NEW=$(U "$GC" image list --json | sed -n 's/^ *"recipe": *"\([0-9a-f]*\)".*/\1/p')
echo "# $(date -u +%FT%TZ) old image $OLD, current $NEW; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); git corral $(git rev-parse --short HEAD)"
boot() { # label, image key value ("" = the current recipe's)
  local t
  cleanup
  { echo 'golden = false'; [ -z "$2" ] || printf 'image = "%s"\n' "$2"; } |
    install -o "$CORRAL_USER" -m 600 /dev/stdin "$BASE/home/config.toml"
  t=$(now); U "$GC" -C "$BASE/proj" run --yes -- true >/dev/null 2>&1
  echo "RESULT $1: create to ready $(since "$t")s (load $(cut -d' ' -f1 /proc/loadavg))"
}
for i in $(seq "$PAIRS"); do
  boot "pair $i, old image $OLD" "$OLD"
  boot "pair $i, current image $NEW" ""
done
echo "# end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
