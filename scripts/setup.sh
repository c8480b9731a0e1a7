#!/usr/bin/env bash
# Install everything git corral and its tests need on a Debian 12 machine of this kind, as root.
# Idempotent: a second run only checks. Used by .ci/run and by the README's quick start.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '%s setup: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# What each step found and how long it took, printed last: CI's output says whether this machine
# had seen this setup before (every step "present") or set it up cold, and what a cold step costs.
steps=()
step_t0=$(date +%s)
step() { # name state: records the step that ran since the last call
  local now; now=$(date +%s)
  steps+=("$1=$2($((now - step_t0))s)")
  step_t0=$now
}
trap 'log "steps: ${steps[*]}"' EXIT

# Debian packages: QEMU and image tools for boxes, ssh/sftp for sessions and reverse-sshfs,
# nftables/iproute2 for the namespace tests, shellcheck for guest scripts, squid/tinyproxy/
# hyperfine/socat for side-by-side benchmarks, man-db/bash-completion/zsh/fish for the CLI tests,
# tmux to drive those shells and the dashboard through a real terminal in the tests, pip's wheel for
# the egress presets e2e (the host's node and npm, present on this machine kind, are its other tools).
PACKAGES=(
  git make man-db bash-completion zsh fish tmux util-linux curl ca-certificates
  qemu-system-x86 qemu-utils mmdebstrap e2fsprogs openssh-client openssh-sftp-server
  nftables iproute2 iptables shellcheck socat hyperfine squid tinyproxy
  openssh-server sudo iputils-ping python3 python3-pip-whl sshfs bubblewrap
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]} (run this script as root)" >&2
    exit 1
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The proxies are for benchmarks only, and sshd only for the vm session tests (which run their
  # own on loopback): never leave them running as services.
  for s in squid tinyproxy ssh; do
    systemctl disable --now "$s" >/dev/null 2>&1 || service "$s" stop >/dev/null 2>&1 || true
  done
  step packages "installed-${#missing[@]}"
else
  log "Debian packages present"
  step packages present
fi

command -v go >/dev/null || { echo "setup: Go is not installed (expected at /usr/local/go)" >&2; exit 1; }
log "$(go version)"
go mod download
step go-modules checked

# ---- vm: Lima, the unprivileged user, the base image --------------------------------------------
# limactl refuses root: the end-to-end suite (and the quick start, when invoked as root) runs the
# product as this user. The base image is cached by the hash of its recipe under the system image
# directory, which every user's git corral also reads, so a second run only checks.
CORRAL_USER=${CORRAL_USER:-corral-ci}
if [ "$(id -u)" -eq 0 ]; then
  lima_log=$(mktemp)
  PREFIX=/usr/local/lib/git-corral/lima SRC=/var/cache/git-corral/lima-build bash scripts/build-lima.sh |
    tee "$lima_log" | sed "s/^/$(date -u +%H:%M:%S) setup: /"
  if grep -q "is already" "$lima_log"; then step lima present; else step lima built; fi
  rm -f "$lima_log"
  if ! id "$CORRAL_USER" >/dev/null 2>&1; then
    log "creating user $CORRAL_USER (runs git corral in the end-to-end suite: limactl refuses root)"
    useradd -m -s /bin/bash "$CORRAL_USER"
    step user created
  else
    step user present
  fi
  mkdir -p /var/cache/git-corral/images
  go build -o /var/cache/git-corral/git-corral-setup ./cmd/git-corral
  step build-git-corral built
  images_before=$(ls /var/cache/git-corral/images)
  /var/cache/git-corral/git-corral-setup image build --dir /var/cache/git-corral/images >/dev/null
  /var/cache/git-corral/git-corral-setup image prune --dir /var/cache/git-corral/images
  if [ "$(ls /var/cache/git-corral/images)" = "$images_before" ]; then step image present; else step image built; fi
  log "base image $(/var/cache/git-corral/git-corral-setup image list --dir /var/cache/git-corral/images | awk '$3 == "true" {print $1; exit}') ready"
else
  log "not root: skipping the Lima build, the $CORRAL_USER user and the base image"
fi
