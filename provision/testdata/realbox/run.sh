#!/bin/sh
# Manual real-box check of the offline lockdown and privilege drop (not part of go test: a boot
# under QEMU TCG takes 5-8 minutes on a loaded 2-core machine). As root, from the repository top:
#   IMAGE=/path/to/dir/with/debian-12-lima.qcow2+vmlinuz+initrd.img sh provision/testdata/realbox/run.sh
# Needs limactl v1.2.2 under $LIMA_PREFIX (reference/lima-recipe/build-lima.sh) and an image from
# reference/lima-recipe/build-image.sh. Creates user corralprov, boots, checks, reboots, checks
# again, then deletes the instance, the user and $B. Probes go only to the slirp gateway (the
# host's own loopback, where a socat listener answers) and slirp's DNS address, and only after
# the guard check reports the lockdown in place.
set -eu
: "${IMAGE:?set IMAGE to the directory holding debian-12-lima.qcow2, vmlinuz and initrd.img}"
B=/var/tmp/corral-provision
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$B/image" "$B/share"
cp "$IMAGE/debian-12-lima.qcow2" "$IMAGE/vmlinuz" "$IMAGE/initrd.img" "$B/image/"
id corralprov >/dev/null 2>&1 || useradd -m -s /bin/bash corralprov
chown corralprov: "$B/share"; chmod 755 "$B" "$B/image"; chmod 644 "$B/image/"*
cp "$HERE/check.sh" "$B/share/check.sh"; chown corralprov: "$B/share/check.sh"
go run ./provision/testdata/realbox offline corralprov "$B/share" "$B/image" 0 >"$B/box.yaml"
socat TCP4-LISTEN:18099,bind=127.0.0.1,fork,reuseaddr SYSTEM:'echo ok' & P4=$!
socat 'TCP6-LISTEN:18099,bind=[::1],fork,reuseaddr' SYSTEM:'echo ok' & P6=$!
cleanup() {
	"$HERE/lima.sh" stop -f cprov >/dev/null 2>&1 || true
	"$HERE/lima.sh" delete -f cprov >/dev/null 2>&1 || true
	kill "$P4" "$P6" 2>/dev/null || true
	userdel -r corralprov 2>/dev/null || true
	rm -rf "$B"
}
trap cleanup EXIT
cd "$B"
# limactl start may end "degraded" (guest agent forward, see the provision report); go on.
"$HERE/lima.sh" --tty=false start --timeout 14m --name cprov ./box.yaml || true
"$HERE/lima.sh" shell --workdir "$B/share" cprov -- bash ./check.sh
"$HERE/lima.sh" stop cprov
"$HERE/lima.sh" --tty=false start --timeout 14m cprov || true
"$HERE/lima.sh" shell --workdir "$B/share" cprov -- bash ./check.sh
