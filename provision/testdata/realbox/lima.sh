#!/bin/sh
# Runs limactl as corralprov with TCG forced (see reference/lima-recipe/lima-env.sh).
exec runuser -u corralprov -- env -u XDG_RUNTIME_DIR HOME=/home/corralprov \
  PATH=/var/tmp/corral-recipe/lima/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
  QEMU_SYSTEM_X86_64="qemu-system-x86_64 -machine q35,vmport=off -accel tcg,thread=multi,tb-size=512" \
  limactl "$@"
