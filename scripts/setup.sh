#!/usr/bin/env bash
# Install everything git corral and its tests need on a Debian 12 machine of this kind, as root.
# Idempotent: a second run only checks. Used by .ci/run and by the README's quick start.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '%s setup: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# Debian packages: QEMU and image tools for boxes, ssh/sftp for sessions and reverse-sshfs,
# nftables/iproute2 for the namespace tests, shellcheck for guest scripts, squid/tinyproxy/
# hyperfine/socat for side-by-side benchmarks, man-db/bash-completion/zsh/fish for the CLI tests.
PACKAGES=(
  git make man-db bash-completion zsh fish util-linux curl ca-certificates
  qemu-system-x86 qemu-utils debootstrap e2fsprogs openssh-client openssh-sftp-server
  nftables iproute2 iptables shellcheck socat hyperfine squid tinyproxy
  sudo iputils-ping python3 sshfs
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
  # The proxies are for benchmarks only: never leave them running as services.
  for s in squid tinyproxy; do
    systemctl disable --now "$s" >/dev/null 2>&1 || service "$s" stop >/dev/null 2>&1 || true
  done
else
  log "Debian packages present"
fi

command -v go >/dev/null || { echo "setup: Go is not installed (expected at /usr/local/go)" >&2; exit 1; }
log "$(go version)"
go mod download
