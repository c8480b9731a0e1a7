#!/bin/bash
# Build git corral's Debian bookworm base image for Lima (qemu driver, direct kernel boot).
# Adapted from shared/reference/lima-recipe/build-image.sh. Run by `git corral image build`, which
# embeds this directory, hashes it (the recipe hash names the cache entry) and reads the
# "PHASE name" lines this script prints for its progress display.
# Output (in $OUT):
#   debian-12-lima.qcow2   root filesystem: a bare ext4 filesystem (no partition table), as qcow2
#   vmlinuz                kernel taken from the rootfs (linux-image-$ARCH)
#   initrd.img             small initramfs built inside the rootfs (MODULES=list: virtio_pci, virtio_blk, ext4)
# INIT=cloud-init|lima-init chooses what reads Lima's cidata ISO in the guest (see below).
# ARCH=amd64|arm64 is the image's architecture (git corral passes it; its recipe hash covers it).
# Another architecture than the host's runs through QEMU user emulation: mmdebstrap and every
# chroot below need qemu-user-static registered with binfmt_misc (flag F), which git corral
# checks before it starts.
# Needs: root, mmdebstrap, e2fsprogs (mkfs.ext4 -d), qemu-utils, access to a Debian mirror.
set -euo pipefail

OUT=${OUT:?OUT must name the output directory}
ARCH=${ARCH:-amd64}
case "$ARCH" in
  amd64) CRC_MODULES=(crc32c_generic crc32c_intel) ;;
  arm64) CRC_MODULES=(crc32c_generic) ;;
  *) echo "ARCH=$ARCH: not amd64 or arm64" >&2; exit 2 ;;
esac
# the machine's own Debian mirror (first URIs: line of its deb822 apt sources)
MIRROR=${MIRROR:-$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)}
SUITE=${SUITE:-bookworm}
# INIT=lima-init : a ~90-line shell replacement for cloud-init (lima-init/ beside this script).
#                  git corral's choice: boots 12-18 s faster under TCG (43-45 s vs 55-63 s READY),
#                  and every box boot (create, restart, each e2e group) pays it. It reads only
#                  Lima v1.2.x's cidata layout, which is pinned with limactl.
# INIT=cloud-init: stock cloud-init reads Lima's cidata ISO (closest to Lima's own images).
INIT=${INIT:-lima-init}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOTFS=$OUT/rootfs
# Packages the Lima boot scripts (pkg/cidata/cidata.TEMPLATE.d/boot/*) and the product need.
if [ "$INIT" = cloud-init ]; then
  # python3-cffi-backend: debootstrap can't resolve the virtual dep python3-cffi-backend-api-*
  # ifupdown + isc-dhcp-client: cloud-init's "eni" renderer writes eth0 from Lima's network-config
  INIT_PKGS=(cloud-init python3-cffi-backend ifupdown isc-dhcp-client)
else
  INIT_PKGS=()                                     # lima-init: systemd-networkd does DHCP on eth0
fi
PKGS=(
  systemd systemd-sysv udev dbus libpam-systemd   # 20-rootless-base.sh: systemctl, logind, loginctl enable-linger
  "${INIT_PKGS[@]}"                                # NoCloud datasource on the "cidata" ISO that Lima attaches
  openssh-server sudo                              # hostagent talks to the guest only via ssh + sudo
  iproute2 procps kmod e2fsprogs netbase           # ip, sysctl, modprobe, resize2fs
  iptables nftables                                # 09-host-dns-setup.sh (else Lima tries apt-get install iptables)
  sshfs fuse3                                      # reverse-sshfs mounts (else Lima tries apt-get install sshfs)
  ca-certificates git less                         # what the product's agents need
  curl build-essential python3 ripgrep jq          # what coding agents expect to find (issue 23)
  "linux-image-$ARCH"                              # modules in /lib/modules + initramfs (kernel is booted directly)
)

mkdir -p "$OUT"
t0=$(date +%s)
echo "PHASE debootstrap"
if [ ! -e "$ROOTFS/.debootstrap-done" ]; then
  rm -rf "$ROOTFS"
  DEBS=${DEBS:-$OUT/debs}; mkdir -p "$DEBS"   # package cache: reruns do not download again
  # mmdebstrap, not debootstrap: it installs with one apt run and dpkg's unsafe-io (no fsync per
  # file; the tree is packed into an image at the end anyway), which took the build from ~37 min
  # to a few minutes of CPU here. MODULES=list is written before any package is installed, so
  # the initramfs the kernel package's trigger builds is the small one (the full one, every
  # module, took minutes under load and was thrown away).
  # shellcheck disable=SC2016 # "$1" is the hooks' own argument (the root), expanded by mmdebstrap
  mmdebstrap --variant=minbase --architectures="$ARCH" --include="$(IFS=,; echo "${PKGS[*]}")" \
    --dpkgopt=force-unsafe-io --aptopt='Acquire::Retries "3"' \
    --setup-hook='mkdir -p "$1/var/cache/apt/archives" "$1/etc/initramfs-tools/conf.d"' \
    --setup-hook='printf "MODULES=list\n" >"$1/etc/initramfs-tools/conf.d/lima.conf"' \
    --setup-hook="sync-in $DEBS /var/cache/apt/archives/" \
    --customize-hook="sync-out /var/cache/apt/archives $DEBS" \
    --skip=essential/unlink \
    "$SUITE" "$ROOTFS" "$MIRROR"
  touch "$ROOTFS/.debootstrap-done"
fi
t1=$(date +%s); echo "TIMING debootstrap $((t1-t0))s"

# ---- configure the rootfs -------------------------------------------------
echo "PHASE configure"
cat >"$ROOTFS/etc/fstab" <<'EOF'
/dev/vda  /  ext4  defaults,discard,errors=remount-ro  0 1
EOF
echo lima-debian >"$ROOTFS/etc/hostname"
cat >"$ROOTFS/etc/hosts" <<'EOF'
127.0.0.1 localhost
::1       localhost ip6-localhost ip6-loopback
EOF
if [ "$INIT" = lima-init ]; then
  # net.ifnames=0 on the kernel cmdline: the single virtio NIC is eth0; QEMU slirp serves DHCP.
  # systemd-networkd instead of ifupdown: no "udevadm settle" (ifupdown-pre, ~5 s) before ssh starts.
  # /etc/resolv.conf is written by lima-init from LIMA_CIDATA_SLIRP_DNS (no systemd-resolved).
  mkdir -p "$ROOTFS/etc/systemd/network"
  printf '[Match]\nName=eth0\n\n[Network]\nDHCP=ipv4\n\n[DHCPv4]\nUseDNS=no\nUseHostname=no\n' \
    >"$ROOTFS/etc/systemd/network/10-eth0.network"
  chroot "$ROOTFS" systemctl enable systemd-networkd.service
  chroot "$ROOTFS" systemctl disable systemd-networkd-wait-online.service >/dev/null 2>&1 || true
  install -m 755 "$HERE/lima-init/lima-init" "$ROOTFS/usr/local/sbin/lima-init"
  install -m 644 "$HERE/lima-init/lima-init-early.service" "$HERE/lima-init/lima-init-boot.service" \
    "$ROOTFS/etc/systemd/system/"
  chroot "$ROOTFS" systemctl enable lima-init-early.service lima-init-boot.service
  # lima-init-early requires the cidata disc's device, which systemd waits for 90 s by default.
  # A software-emulated box on a loaded host plugs it later (seen: kernel at 132 s, the device
  # job timed out, both lima-init units failed on their dependency, no boot script ran and
  # Lima waited its 20 minutes for a box that was up); wait as long as Lima does.
  mkdir -p "$ROOTFS/etc/systemd/system/dev-disk-by\\x2dlabel-cidata.device.d"
  printf '[Unit]\nJobRunningTimeoutSec=20min\n' >"$ROOTFS/etc/systemd/system/dev-disk-by\\x2dlabel-cidata.device.d/corral-timeout.conf"
  # the 127.0.1.1 line is rewritten by lima-init with the instance's hostname
else
# loopback; eth0 is written by cloud-init from Lima's network-config
cat >"$ROOTFS/etc/network/interfaces" <<'EOF'
auto lo
iface lo inet loopback
source /etc/network/interfaces.d/*
EOF
mkdir -p "$ROOTFS/etc/network/interfaces.d"
# cloud-init: only NoCloud (Lima's cidata ISO), keep baked ssh host keys (keygen is slow under TCG)
cat >"$ROOTFS/etc/cloud/cloud.cfg.d/90-corral-recipe.cfg" <<'EOF'
datasource_list: [ NoCloud, None ]
ssh_deletekeys: false
ssh_genkeytypes: []
# no locales package in the image: cc_locale would fail and mark cloud-config.service failed
locale: false
# the hostname Lima sets (lima-NAME) must resolve, or sudo prints "unable to resolve host"
manage_etc_hosts: localhost
EOF
fi

# sessions pass their environment inside the SSH channel (setenv); the box user may already run
# anything in the guest, so accepting any name grants nothing new.
mkdir -p "$ROOTFS/etc/ssh/sshd_config.d"
printf 'AcceptEnv *\n' >"$ROOTFS/etc/ssh/sshd_config.d/50-corral.conf"

# fresh machine-id per VM
: >"$ROOTFS/etc/machine-id"
rm -f "$ROOTFS/var/lib/dbus/machine-id"

# nothing in the guest should try to reach the network on a timer
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer; do
  chroot "$ROOTFS" systemctl disable "$u" >/dev/null 2>&1 || true
  chroot "$ROOTFS" systemctl mask "$u" >/dev/null 2>&1 || true
done
# serial console login is not needed; avoid the getty waiting on ttyS0
chroot "$ROOTFS" systemctl mask serial-getty@ttyS0.service >/dev/null 2>&1 || true

# kernel modules: drop hardware a QEMU guest never has (~230 MB of 395 MB)
KVER=$(find "$ROOTFS/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -1)
if [ -z "$KVER" ] || [ ! -d "$ROOTFS/lib/modules/$KVER/kernel" ]; then
  echo "no kernel modules in $ROOTFS" >&2; exit 1
fi
KD="$ROOTFS/lib/modules/$KVER/kernel"
rm -rf "$KD"/sound "$KD"/drivers/{gpu,media,infiniband,usb,iio,staging,comedi,isdn,mtd,hwmon,platform,bluetooth,mmc} \
       "$KD"/drivers/net/{wireless,ethernet,can,usb}
chroot "$ROOTFS" depmod -a "$KVER"

echo "PHASE initramfs"
# small initramfs: only what mounting /dev/vda (ext4 on virtio-blk) needs
cat >"$ROOTFS/etc/initramfs-tools/conf.d/lima.conf" <<'CONF'
MODULES=list
CONF
printf '%s\n' virtio_pci virtio_blk ext4 "${CRC_MODULES[@]}" >"$ROOTFS/etc/initramfs-tools/modules"
chroot "$ROOTFS" mkinitramfs -o "/boot/initrd.img-$KVER" "$KVER"

# kernel + initrd for direct boot (kept outside the image: qemu -kernel/-initrd)
cp "$ROOTFS/boot/vmlinuz-$KVER" "$OUT/vmlinuz"
mv "$ROOTFS/boot/initrd.img-$KVER" "$OUT/initrd.img"
echo "kernel: $KVER"

# trim
chroot "$ROOTFS" apt-get clean
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
       "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/locale/* \
       "$ROOTFS"/var/log/*.log
rm -f "$ROOTFS/.debootstrap-done"

# ---- filesystem image -----------------------------------------------------
echo "PHASE mkfs"
USED_MB=$(du -sm --apparent-size "$ROOTFS" | cut -f1)
SIZE_MB=$(( USED_MB * 13 / 10 + 256 ))
rm -f "$OUT/root.raw"
mkfs.ext4 -q -L lima-root -d "$ROOTFS" "$OUT/root.raw" "${SIZE_MB}M"
rm -rf "$ROOTFS"
t2=$(date +%s); echo "TIMING mkfs $((t2-t1))s (rootfs ${USED_MB} MiB, fs ${SIZE_MB} MiB)"
echo "PHASE qcow2"
qemu-img convert -f raw -O qcow2 "$OUT/root.raw" "$OUT/debian-12-lima.qcow2"
rm -f "$OUT/root.raw"
t3=$(date +%s); echo "TIMING qcow2 $((t3-t2))s; total $((t3-t0))s"
chmod 644 "$OUT"/vmlinuz "$OUT"/initrd.img "$OUT"/debian-12-lima.qcow2
ls -la "$OUT"
echo "PHASE done"
