#!/usr/bin/env bash
# The README's first command: set everything up on a fresh Debian 12 machine of this kind and run
# the main job on a demo repository — boot a box, run a command in it, show that a hook and a
# config change planted from the box did not reach the host, and show git corral diff.
# Idempotent; run as root (it installs Debian packages). limactl refuses root, so the demo runs
# as the unprivileged user scripts/setup.sh creates (CORRAL_USER, default corral-ci).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
bash scripts/setup.sh
make -s install
user=${CORRAL_USER:-corral-ci}
demo=${DEMO_DIR:-/var/tmp/git-corral-demo}
uhome=$(getent passwd "$user" | cut -d: -f6)
as_user() {
  runuser -u "$user" -- env -i HOME="$uhome" USER="$user" LOGNAME="$user" TERM=dumb \
    PATH=/usr/local/bin:/usr/bin:/bin "$@"
}
if [ ! -d "$demo/.git" ]; then
  install -d -o "$user" -g "$user" "$demo"
  as_user git -C "$demo" init -q
  printf 'all:\n\t@echo built\n' | as_user tee "$demo/Makefile" >/dev/null
  as_user git -C "$demo" add Makefile
  as_user git -C "$demo" -c user.name=demo -c user.email=demo@corral.invalid commit -qm "demo project"
fi
step() { printf '\n== %s\n' "$*"; }
step "git corral run --yes -- uname -a   (creates and boots the box on first use)"
as_user git -C "$demo" corral run --yes -- uname -a
# A second run shows the same thing: the demo's Makefile starts from its commit again.
as_user git -C "$demo" checkout -q -- Makefile
step "from inside the box: plant a pre-commit hook and core.fsmonitor in the host's .git"
as_user git -C "$demo" corral run -- sh -c 'exec 2>&1
  printf "#!/bin/sh\ntouch /tmp/corral-demo-pwned\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo "hook written" || echo "hook refused"
  git config core.fsmonitor "touch /tmp/corral-demo-pwned" && echo "config written" || echo "config refused"
  echo "install: all" >> Makefile' || true
step "on the host: the hook and the config change did not arrive"
if [ -e "$demo/.git/hooks/pre-commit" ]; then echo "pre-commit hook: PRESENT (unexpected)"; else echo "pre-commit hook: absent"; fi
echo "core.fsmonitor on the host: '$(as_user git -C "$demo" config core.fsmonitor || true)'"
rm -f /tmp/corral-demo-pwned
as_user git -C "$demo" status --short >/dev/null
if [ -e /tmp/corral-demo-pwned ]; then echo "host git status ran a planted command (unexpected)"; else echo "host git status ran nothing the box planted (/tmp/corral-demo-pwned absent)"; fi
step "git corral diff: what the box changed in files the host will execute"
as_user git -C "$demo" corral diff || true
step "the box keeps running, so the next command (or a second run of this script) starts in about a second"
echo "stop it:   runuser -u $user -- git -C $demo corral stop"
echo "remove it: runuser -u $user -- git -C $demo corral delete --yes"
