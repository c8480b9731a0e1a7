#!/bin/sh
# git corral 30-privdrop: in broker and offline modes the box user loses every path to root
# before any repository script runs: root-equivalent groups, cloud-init's and Lima's sudoers
# entries (lima-init rewrites its entry at every boot, so this runs at every boot and the deny
# rule below outranks it), setuid and setgid programs (su, pkexec, newgrp, ...), setuid on the
# project mount. What stays is one sudoers file naming fixed commands with fixed arguments.
# Ends by running the deep guard check (network and privileges) and recording it in
# /run/corral/attest; fails while anything remains.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022
{{.InstallFile}}
MODE={{.Mode}}
BOX_USER={{.User}}
# This box's project mount point, written by 05-box at every boot ('' for none).
PROJECT_DIR=$(cat /etc/corral/project-dir) || { echo "corral: /etc/corral/project-dir is missing: 05-box did not run" >&2; exit 1; }
SUDOERS=/etc/sudoers.d/zz-corral

if [ "$MODE" = full ]; then
	rm -f "$SUDOERS"
	echo "corral: network mode full, privileges unchanged"
	exit 0
fi
id -u "$BOX_USER" >/dev/null 2>&1 || { echo "corral: box user $BOX_USER does not exist" >&2; exit 1; }

# Groups: see FORBIDDEN_GROUPS in the guard check for why each is here.
FORBIDDEN_GROUPS="{{.ForbiddenGroups}}"
primary=$(id -gn "$BOX_USER")
for g in $(id -nG "$BOX_USER"); do
	case " $FORBIDDEN_GROUPS " in *" $g "*) ;; *) continue ;; esac
	if [ "$g" = "$primary" ]; then
		echo "corral: the primary group of $BOX_USER is $g; refusing to continue" >&2
		exit 1
	fi
	gpasswd -d "$BOX_USER" "$g" >/dev/null
	echo "corral: removed $BOX_USER from group $g"
done

# sudo: the deny-all rule comes last in file order, so it wins over any earlier entry; the
# known entries are removed as well.
install -d -m 0755 -o root -g root /etc/sudoers.d
{{heredoc "/etc/sudoers.d/zz-corral" "0440" .Sudoers}}
if command -v visudo >/dev/null 2>&1; then
	visudo -c -q -f "$SUDOERS" || { rm -f "$SUDOERS"; echo "corral: $SUDOERS does not parse" >&2; exit 1; }
fi
# Removed only now, so that Lima's readiness probes never meet a moment without a rule.
rm -f /etc/sudoers.d/90-cloud-init-users /etc/sudoers.d/90-lima-user

# setuid and setgid programs other than the few the box needs (sudo for the fixed helpers,
# fusermount for reverse-sshfs mounts, dbus's activation helper, which only messagebus runs).
uid=$(id -u "$BOX_USER")
gid=$(id -g "$BOX_USER")
find / -xdev \( -path /home -o -path /tmp -o -path /var/tmp \) -prune -o -type f \( \( -perm -4000 ! -uid "$uid" \) -o \( -perm -2000 ! -gid "$gid" \) \) \
	! -path /usr/bin/sudo ! -path /usr/bin/fusermount3 ! -path /usr/bin/fusermount \
	! -path /usr/lib/dbus-1.0/dbus-daemon-launch-helper -exec chmod u-s,g-s {} +

if [ -n "$PROJECT_DIR" ] && mountpoint -q "$PROJECT_DIR"; then
	mount -o remount,nosuid,nodev "$PROJECT_DIR"
fi

# Processes of the box user started before the drop keep their old groups: end them. The
# guard check's held_groups finds them.
for pid in $(/usr/local/libexec/corral/guard-check held-groups); do
	kill -KILL "$pid" 2>/dev/null || true
done

# The deep check, recorded for this boot: the session check before every session reads it.
if ! report=$(/usr/local/libexec/corral/guard-check attest); then
	echo "corral: guards do not hold after the drop: $report" >&2
	exit 1
fi
echo "corral: privileges dropped for $BOX_USER"
