#!/bin/sh
# git corral 20-lockdown: the broker or offline network lockdown, before any repository script
# runs. The ruleset is a root-owned file; a unit ordered before network-pre.target loads it at
# every later boot, so the network never comes up open. In full mode any earlier lockdown is
# removed. Runs as root at every boot.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022
{{.InstallFile}}
MODE={{.Mode}}
WANTS=/etc/systemd/system/sysinit.target.wants

if [ "$MODE" = full ]; then
	rm -f "$WANTS/corral-lockdown.service" /etc/systemd/system/corral-lockdown.service /etc/corral/lockdown.nft
	if [ -L /etc/systemd/system/nftables.service ] && [ "$(readlink /etc/systemd/system/nftables.service)" = /dev/null ]; then
		rm -f /etc/systemd/system/nftables.service
	fi
	if command -v nft >/dev/null 2>&1 && nft list table inet corral >/dev/null 2>&1; then
		nft delete table inet corral
	fi
	echo "corral: network mode full, no lockdown"
	exit 0
fi

command -v nft >/dev/null 2>&1 || { echo "corral: nft is not installed; refusing to continue without the $MODE lockdown" >&2; exit 1; }
install -d -m 0755 -o root -g root /etc/corral "$WANTS"
{{heredoc "/etc/corral/lockdown.nft" "0644" .Ruleset}}
{{heredoc "/etc/systemd/system/corral-lockdown.service" "0644" .Unit}}
ln -sfn /etc/systemd/system/corral-lockdown.service "$WANTS/corral-lockdown.service"
# Debian's own nftables.service would flush this ruleset for an open one.
ln -sfn /dev/null /etc/systemd/system/nftables.service
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
fi
nft -f /etc/corral/lockdown.nft
/usr/local/libexec/corral/guard-check network >/dev/null || {
	/usr/local/libexec/corral/guard-check network >&2 || true
	echo "corral: the $MODE lockdown did not take hold" >&2
	exit 1
}
echo "corral: $MODE lockdown loaded"
