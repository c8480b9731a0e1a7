# bench/lib.sh — what the box benchmarks share (sourced, as root, from the repository's root,
# with BASE set): git corral built into $BASE/bin, U to run a command as the unprivileged
# $CORRAL_USER with CORRAL_HOME and LIMA_HOME under $BASE/home (limactl refuses root) and QEMU
# under software emulation, and now/since for wall times.
# shellcheck shell=bash disable=SC2034 # LIMACTL and GC are for the scripts that source this
CORRAL_USER=${CORRAL_USER:-corral-ci}
LIMACTL=/usr/local/lib/git-corral/lima/bin/limactl
QEMU="qemu-system-x86_64 -machine q35,vmport=off -accel tcg,thread=multi,tb-size=512"
mkdir -p "$BASE/bin"
# As make install lays them out: the front as git-corral, the full binary and the helper beside it.
make -s build BINDIR="$BASE/bin"
chmod 755 "$BASE" "$BASE/bin" "$BASE/bin/git-corral"
GC="$BASE/bin/git-corral"
U() { runuser -u "$CORRAL_USER" -- env -i HOME="$BASE/home" CORRAL_HOME="$BASE/home" LIMA_HOME="$BASE/home/lima" \
  PATH=/usr/local/bin:/usr/bin:/bin QEMU_SYSTEM_X86_64="$QEMU" "$@"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
