#!/usr/bin/env bash
# golden-bench.sh: time to a ready second box from a golden base (qcow2 backing file) versus
# from scratch, and the disk each uses, versus `limactl clone`. Run as root; limactl runs as
# $BENCH_USER (default corral-ci). PAIRS=N repeats scratch/golden pairs (default 2).
# PROVISION=go adds a provisioning step to the template, a toolchain install that runs at first
# boot like a product guest script would: the host's Go toolchain (/usr/local/go, ~270 MB) is put
# on the 9p share as a tarball and unpacked to /opt/go in the guest; later boots (and boxes from
# the golden base) find it and skip. No network is used.
set -euo pipefail
U=${BENCH_USER:-corral-ci}
PAIRS=${PAIRS:-2}
LC=${LIMACTL:-/usr/local/lib/git-corral/lima/bin/limactl}
# shellcheck disable=SC2012 # image directories are hex hashes
IMG=${IMAGE_DIR:-$(ls -d /var/cache/git-corral/images/*/ | head -1)}
IMG=${IMG%/}
W=/var/tmp/corral-golden-bench
rm -rf "$W"; mkdir -p "$W/lima" "$W/share"; chown -R "$U:" "$W"
as() { runuser -u "$U" -- env HOME="$W" LIMA_HOME="$W/lima" \
  QEMU_SYSTEM_X86_64="qemu-system-x86_64 -machine q35,vmport=off -accel tcg,thread=multi,tb-size=512" "$@"; }
cleanup() { for n in $(as "$LC" --tty=false list --format '{{.Name}}' 2>/dev/null); do
  as "$LC" --tty=false stop --force "$n" >/dev/null 2>&1 || true; as "$LC" --tty=false delete --force "$n" >/dev/null 2>&1 || true; done; }
trap cleanup EXIT
cat > "$W/box.yaml" <<YAML
vmType: qemu
os: Linux
arch: x86_64
cpuType: {x86_64: max}
cpus: 2
memory: 2GiB
disk: 10GiB
images:
- location: "$IMG/debian-12-lima.qcow2"
  arch: x86_64
  kernel:
    location: "$IMG/vmlinuz"
    cmdline: "root=/dev/vda rw console=ttyS0 net.ifnames=0"
  initrd:
    location: "$IMG/initrd.img"
firmware: {legacyBIOS: true}
mountType: "9p"
mounts:
- location: "$W/share"
  mountPoint: /mnt/share
  writable: true
ssh: {localPort: 0, loadDotSSHPubKeys: false}
containerd: {system: false, user: false}
video: {display: none}
YAML
if [ "${PROVISION:-}" = go ]; then
  tar -C /usr/local -cf - go | gzip -1 >"$W/share/go.tar.gz"
  chown "$U:" "$W/share/go.tar.gz"
  cat >>"$W/box.yaml" <<'YAML'
provision:
- mode: system
  script: |
    #!/bin/sh
    set -e
    test -x /opt/go/bin/go && exit 0
    mkdir -p /opt
    tar -C /opt -xzf /mnt/share/go.tar.gz
    /opt/go/bin/go version
YAML
fi
chown "$U:" "$W/box.yaml"
# cpu NAME: CPU seconds the box's QEMU process has used so far (less sensitive to a busy
# neighbour than wall time, since TCG boots are CPU-bound).
cpu() { ps -o times= -p "$(cat "$W/lima/$1/qemu.pid")" | tr -d ' '; }
t() { local s e; s=$(date +%s.%N); "$@" >>"$W/log" 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
LCA() { as "$LC" --tty=false "$@"; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# The golden base: one box from scratch, stopped, its disk flattened into one read-only qcow2.
g0=$(t LCA start --timeout 20m --name golden-src "$W/box.yaml")
echo "golden source boot (from scratch): $g0 s, QEMU CPU $(cpu golden-src) s"
LCA stop golden-src >>"$W/log" 2>&1
gb=$(t as qemu-img convert -O qcow2 "$W/lima/golden-src/diffdisk" "$W/golden.qcow2")
chmod 0444 "$W/golden.qcow2"
sum0=$(sha256sum "$W/golden.qcow2" | cut -d' ' -f1)
echo "golden flatten (qemu-img convert): $gb s, $(du -m "$W/golden.qcow2" | cut -f1) MB"
# limactl clone of the stopped source: the alternative.
cl=$(t LCA clone golden-src clone1)
echo "limactl clone: $cl s, instance dir $(du -sm "$W/lima/clone1" | cut -f1) MB"
LCA delete --force clone1 >>"$W/log" 2>&1
# overlay creation alone
ov=$(t as qemu-img create -f qcow2 -F qcow2 -b "$W/golden.qcow2" "$W/probe.qcow2" 10G)
echo "qemu-img overlay create: $ov s, $(du -k "$W/probe.qcow2" | cut -f1) KB"
rm -f "$W/probe.qcow2"
for i in $(seq 1 "$PAIRS"); do
  if [ "${SCRATCH:-1}" = 1 ]; then
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  s=$(t LCA start --timeout 20m --name "scratch$i" "$W/box.yaml")
  echo "pair $i scratch: create+start to READY $s s, QEMU CPU $(cpu "scratch$i") s, instance dir $(du -sm "$W/lima/scratch$i" | cut -f1) MB"
  LCA delete --force "scratch$i" >>"$W/log" 2>&1
  fi
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  s0=$(date +%s.%N)
  LCA create --name "gold$i" "$W/box.yaml" >>"$W/log" 2>&1
  d="$W/lima/gold$i"
  as qemu-img create -q -f qcow2 -F qcow2 -b "$W/golden.qcow2" "$d/basedisk"
  as qemu-img create -q -f qcow2 -F qcow2 -b "$W/golden.qcow2" "$d/diffdisk" 10G
  as cp "$IMG/vmlinuz" "$d/kernel"; as cp "$IMG/initrd.img" "$d/initrd"
  as sh -c "printf %s 'root=/dev/vda rw console=ttyS0 net.ifnames=0' > '$d/kernel.cmdline'"
  LCA start --timeout 20m "gold$i" >>"$W/log" 2>&1
  e0=$(date +%s.%N)
  echo "pair $i golden: create+overlay+start to READY $(echo "$e0 - $s0" | bc) s, QEMU CPU $(cpu "gold$i") s, instance dir $(du -sm "$d" | cut -f1) MB, diffdisk $(du -m "$d/diffdisk" | cut -f1) MB"
  LCA shell "gold$i" -- sh -c 'echo written > ~/golden-write-test && sync' >>"$W/log" 2>&1 || echo "shell write failed"
  if [ "${PROVISION:-}" = go ]; then
    LCA shell "gold$i" -- /opt/go/bin/go version >>"$W/log" 2>&1 && echo "pair $i golden: toolchain from the base present" || echo "pair $i golden: TOOLCHAIN MISSING"
  fi
  LCA delete --force "gold$i" >>"$W/log" 2>&1
done
sum1=$(sha256sum "$W/golden.qcow2" | cut -d' ' -f1)
[ "$sum0" = "$sum1" ] && echo "golden sha256 unchanged after $PAIRS boxes wrote to it: $sum1" || echo "GOLDEN CHANGED: $sum0 -> $sum1"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
