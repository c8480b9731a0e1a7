#!/usr/bin/env bash
# Build the pinned limactl and the Linux/x86_64 guest agent from the Go module proxy into $PREFIX:
#   $PREFIX/bin/limactl
#   $PREFIX/share/lima/lima-guestagent.Linux-x86_64   (Lima finds it via <dir of limactl>/../share/lima)
# `go install …@version` fails here (the proxy refuses the version list it asks for), so a scratch
# module requires the exact version. Skips the build when the installed limactl already matches.
#
# The patches in scripts/lima-patches/ are applied to the vendored Lima source before the build
# (each says why in its own comments); $PREFIX/share/lima/corral-patches.sha256 records which, so
# a changed patch set rebuilds. Today: the host agent retries its readiness requirements every
# second instead of every 10 s (a box was READY up to 10 s after it was ready, at every boot).
set -euo pipefail
LIMA_VERSION=${LIMA_VERSION:-v1.2.2}
PREFIX=${PREFIX:-/usr/local/lib/git-corral/lima}
SRC=${SRC:-${XDG_CACHE_HOME:-$HOME/.cache}/git-corral/lima-build-$LIMA_VERSION}
PATCHES=$(cd "$(dirname "$0")/lima-patches" && pwd)
patches_sum=$(cat "$PATCHES"/*.patch | sha256sum | cut -d' ' -f1)

if [ -x "$PREFIX/bin/limactl" ] && [ -f "$PREFIX/share/lima/lima-guestagent.Linux-x86_64" ] &&
  [ "$("$PREFIX/bin/limactl" --version 2>/dev/null)" = "limactl version ${LIMA_VERSION#v}" ] &&
  [ "$(cat "$PREFIX/share/lima/corral-patches.sha256" 2>/dev/null)" = "$patches_sum" ]; then
  echo "lima: $PREFIX/bin/limactl is already ${LIMA_VERSION#v} with git corral's patches ${patches_sum:0:12}"
  exit 0
fi
mkdir -p "$SRC" "$PREFIX/bin" "$PREFIX/share/lima"
cd "$SRC"
[ -f go.mod ] || go mod init limabuild >/dev/null 2>&1
cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "github.com/lima-vm/lima/cmd/lima-guestagent"
	_ "github.com/lima-vm/lima/cmd/limactl"
)
GO
go mod edit -require="github.com/lima-vm/lima@$LIMA_VERSION"
go mod tidy
# The module cache is read-only: vendor the source and patch the copy.
rm -rf vendor
go mod vendor
for p in "$PATCHES"/*.patch; do
  echo "lima: applying $(basename "$p")"
  patch -s -p1 -d vendor/github.com/lima-vm/lima <"$p"
done
LDF="-s -w -X github.com/lima-vm/lima/pkg/version.Version=${LIMA_VERSION#v}"
mkdir -p out
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -mod=vendor -trimpath -ldflags="$LDF" -o out/ \
  github.com/lima-vm/lima/cmd/limactl github.com/lima-vm/lima/cmd/lima-guestagent
install -m 755 out/limactl "$PREFIX/bin/limactl"
install -m 644 out/lima-guestagent "$PREFIX/share/lima/lima-guestagent.Linux-x86_64"
echo "$patches_sum" >"$PREFIX/share/lima/corral-patches.sha256.tmp"
mv "$PREFIX/share/lima/corral-patches.sha256.tmp" "$PREFIX/share/lima/corral-patches.sha256"
"$PREFIX/bin/limactl" --version
