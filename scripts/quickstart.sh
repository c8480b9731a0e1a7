#!/usr/bin/env bash
# The README's first command: set everything up on a fresh Debian 12 machine of this kind and run
# the main job on a demo repository. Idempotent; run as root (it installs Debian packages).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
bash scripts/setup.sh
make -s install
demo=${DEMO_DIR:-/var/tmp/git-corral-demo}
if [ ! -d "$demo/.git" ]; then
  mkdir -p "$demo"
  git -C "$demo" init -q
  printf 'all:\n\t@echo built\n' >"$demo/Makefile"
  git -C "$demo" add Makefile
  git -C "$demo" -c user.name=demo -c user.email=demo@corral.invalid commit -qm "demo project"
fi
echo "== git corral info (in $demo)"
git -C "$demo" corral info
echo "== git corral run -- uname -a"
git -C "$demo" corral run -- uname -a
