#!/bin/sh
# git corral guard check. Installed root-owned at /usr/local/libexec/corral/guard-check; prints one
# JSON document {"ok","mode","failures"} and exits 0 only when every guard of this box's mode
# holds. Parts:
#   (none)      the deep check, as root (through the fixed sudoers entry): everything, live.
#   attest      as root, at the end of the privilege drop at every boot: the deep network and
#               privilege checks, recorded in /run/corral/attest for the session check.
#   session     as the box user, before every session (vm runs it over SSH, no sudo): the boot's
#               attestation (root-only state: the live ruleset, sudo, setuid files, which only
#               root can change once privileges are dropped) plus everything the box user can
#               check or change live: groups held by its session, root-run paths and
#               container sockets it could write, reverse-sshfs mounts, the git shadow's
#               mounts. It is session-check (bash builtins only, see there).
#   network, privileges, held-groups   parts used by the boot scripts.
# Values below were fixed when the box was rendered; nothing is read from the environment.
set -u
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
LC_ALL=C
export LC_ALL
umask 077

MODE={{.Mode}}
BOX_USER={{.User}}
# This box's project mount point is read by check_paths from PROJECT_FILE (05-box writes it).
PROJECT_FILE=/etc/corral/project-dir
RULESET=/etc/corral/lockdown.nft
RULESET_SHA256={{.RulesetSHA256}}
# Broker mode: the ruleset includes this box's port from here (05-box writes it at every boot).
BROKER_PORT_FILE={{.BrokerPortFile}}
UNIT=/etc/systemd/system/corral-lockdown.service
UNIT_SHA256={{.UnitSHA256}}
SUDOERS=/etc/sudoers.d/zz-corral
SUDOERS_SHA256={{.SudoersSHA256}}
SHADOW_EXPECTED={{.ShadowExpected}}
COVER_EXPECTED={{.CoverExpected}}
COVER_EXPECT=/run/corral/cover.expect
# The end of "sudo -l -U BOX_USER" when only /etc/sudoers.d/zz-corral grants anything.
SUDO_TAIL='    (ALL : ALL) !ALL
    (root) NOPASSWD: /usr/local/libexec/corral/guard-check ""
    (root) NOPASSWD: /usr/bin/diff -q /run/lima-ssh-ready /mnt/lima-cidata/meta-data
    (root) NOPASSWD: /usr/bin/diff -q /run/lima-boot-done /mnt/lima-cidata/meta-data
    (root) NOPASSWD: /usr/bin/grep -q ^user_allow_other /etc/fuse.conf'
SHADOW_EXPECT=/run/corral/shadow.expect
ATTEST=/run/corral/attest
# Paths root runs or reads from: owned by root, writable by nobody else.
ROOT_PATHS={{.RootPaths}}
SHADOW_GUARD=/usr/local/libexec/corral/gitshadow-guard
# Groups that are root or reach root, and groups the box has no use for (render.go says why
# each is here).
FORBIDDEN_GROUPS="{{.ForbiddenGroups}}"
# Container and VM manager sockets that hand out root to whoever may write them.
SOCKETS={{.Sockets}}

failures=""
fail() {
	# JSON string: drop control characters, escape backslash and double quote.
	s=$(printf '%s' "$1" | tr -d '\000-\037\177' | sed 's/\\/\\\\/g; s/"/\\"/g')
	failures="${failures}${failures:+,}\"$s\""
}

sha256_of() {
	{ sha256sum <"$1"; } 2>/dev/null | cut -d' ' -f1
}

check_network() {
	[ "$MODE" = full ] && return 0
	[ "$(sha256_of "$RULESET")" = "$RULESET_SHA256" ] || fail "lockdown ruleset $RULESET is missing or differs from the rendered one"
	[ "$(sha256_of "$UNIT")" = "$UNIT_SHA256" ] || fail "boot unit $UNIT is missing or differs from the rendered one"
	[ -L /etc/systemd/system/sysinit.target.wants/corral-lockdown.service ] || fail "boot unit corral-lockdown.service is not enabled"
	if [ "$MODE" = broker ]; then
		# Root's, writable by root only, and one line that names a port and nothing else: the
		# ruleset reads it as nftables text.
		[ "$(stat -c '%u %a' "$BROKER_PORT_FILE" 2>/dev/null)" = "0 644" ] || fail "broker port file $BROKER_PORT_FILE is missing, not root's or not mode 0644"
		if [ "$(grep -c '' "$BROKER_PORT_FILE" 2>/dev/null)" != 1 ] || ! grep -Eqx 'define broker_port = [1-9][0-9]{0,4}' "$BROKER_PORT_FILE"; then
			fail "broker port file $BROKER_PORT_FILE is not one 'define broker_port = PORT' line"
		fi
	fi
	if ! live=$(nft list ruleset 2>/dev/null); then
		fail "cannot list the live nftables ruleset"
		return 0
	fi
	# The expected listing comes from loading the rendered file into an empty network
	# namespace with the same nft and kernel, so the two listings compare byte for byte.
	# shellcheck disable=SC2016
	if ! want=$(unshare --net -- sh -c 'nft -f "$1" && nft list ruleset' sh "$RULESET" 2>/dev/null); then
		fail "cannot load $RULESET into a scratch network namespace"
		return 0
	fi
	if [ -z "$want" ] || [ "$live" != "$want" ]; then
		fail "live nftables ruleset differs from $RULESET"
	fi
}

check_groups() {
	if ! uid=$(id -u "$BOX_USER" 2>/dev/null); then
		fail "box user $BOX_USER does not exist"
		return 0
	fi
	[ "$uid" != 0 ] || fail "box user $BOX_USER has uid 0"
	others=$(awk -F: '$3 == 0 && $1 != "root" { printf "%s ", $1 }' /etc/passwd)
	[ -z "$others" ] || fail "accounts other than root have uid 0: $others"
	for g in $(id -nG "$BOX_USER"); do
		case " $FORBIDDEN_GROUPS " in *" $g "*) fail "box user is in group $g" ;; esac
	done
	# Processes started before the drop keep their old groups.
	pids=$(held_groups "$uid" | tr '\n' ' ')
	[ -z "$pids" ] || fail "processes of the box user still hold a root-equivalent group: $pids"
}

# held_groups prints the pid of every process running as uid (effective) that holds a forbidden
# group, as its effective or a supplementary group; zombies, which can do nothing, are skipped.
# (A setuid program such as sudo, which runs with effective uid 0, is the setid allow-list's
# business.) One pass over /proc through cat,
# which goes on past processes that exit meanwhile.
held_groups() {
	bad=$(awk -F: -v names=" $FORBIDDEN_GROUPS " 'index(names, " " $1 " ") { printf " %s", $3 } END { print " " }' /etc/group)
	cat /proc/[0-9]*/status 2>/dev/null | awk -v uid="$1" -v bad="$bad" '
		$1 == "Name:" { mine = 0; zombie = 0 }
		$1 == "State:" { zombie = ($2 == "Z") }
		$1 == "Pid:" { pid = $2 }
		$1 == "Uid:" { mine = ($3 == uid && !zombie) }
		$1 == "Gid:" && mine && index(bad, " " $3 " ") { print pid; mine = 0 }
		$1 == "Groups:" && mine { for (i = 2; i <= NF; i++) if (index(bad, " " $i " ")) { print pid; break } }'
}

check_sudo() {
	for f in /etc/sudoers.d/90-cloud-init-users /etc/sudoers.d/90-lima-user; do
		[ -e "$f" ] && fail "sudoers entry $f is still present"
	done
	for f in /etc/sudoers.d/* /etc/sudoers.d/.*; do
		case "$f" in /etc/sudoers.d/README | "$SUDOERS" | /etc/sudoers.d/. | /etc/sudoers.d/.. | '/etc/sudoers.d/*' | '/etc/sudoers.d/.*') ;;
		*) fail "unexpected sudoers file $f" ;;
		esac
	done
	[ "$(sha256_of "$SUDOERS")" = "$SUDOERS_SHA256" ] || fail "sudoers file $SUDOERS is missing or differs from the rendered one"
	command -v sudo >/dev/null 2>&1 || return 0
	# Ask sudo itself. Its listing must end with the deny-all rule and exactly the fixed commands
	# (the last matching rule wins, so anything earlier is overridden and anything later is a
	# grant), and its defaults must not pass the caller's environment to root. Two sudo runs in
	# all: each costs about a second under QEMU's software emulation.
	if listing=$(sudo -n -l -U "$BOX_USER" 2>/dev/null); then
		tail=$(printf '%s\n' "$listing" | awk 'f && /^    / { print } /may run the following commands/ { f = 1 }' | tail -n 5)
		[ "$tail" = "$SUDO_TAIL" ] || fail "sudo grants the box user more than the fixed commands: $(printf '%s' "$listing" | tail -n 3 | tr '\n' ' ')"
		defaults=$(printf '%s\n' "$listing" | awk '/^Matching Defaults/ { f = 1; next } /^$/ { f = 0 } f')
		case "$defaults" in *'!env_reset'* | *setenv* | *env_keep* | *env_check*) fail "sudo defaults let the caller's environment reach root: $defaults" ;; esac
	fi
	if sudo -n -l -U "$BOX_USER" /bin/sh >/dev/null 2>&1; then fail "sudo lets the box user run /bin/sh"; fi
}

check_setid() {
	# A setuid file of the box user's own, or setgid to its own primary group, gives nothing.
	# Only root can make any other, so the user's own trees (/home, /tmp, /var/tmp: an agent's
	# caches can hold hundreds of thousands of files) are skipped to keep this check quick.
	uid=$(id -u "$BOX_USER" 2>/dev/null) || uid=999999999
	gid=$(id -g "$BOX_USER" 2>/dev/null) || gid=999999999
	n=$(find / -xdev \( -path /home -o -path /tmp -o -path /var/tmp \) -prune -o -type f \( \( -perm -4000 ! -uid "$uid" \) -o \( -perm -2000 ! -gid "$gid" \) \) \
		! -path /usr/bin/sudo ! -path /usr/bin/fusermount3 ! -path /usr/bin/fusermount \
		! -path /usr/lib/dbus-1.0/dbus-daemon-launch-helper -print 2>/dev/null | head -n 20 | tr '\n' ' ')
	[ -z "$n" ] || fail "setuid or setgid programs remain: $n"
}

check_paths() {
	for p in $ROOT_PATHS; do
		st=$(stat -c '%u %a' "$p" 2>/dev/null) || { fail "root-run path $p is missing"; continue; }
		owner=${st% *}
		mode=${st#* }
		[ "$owner" = 0 ] || fail "root-run path $p is not owned by root"
		case "$mode" in *[2367]? | *[2367]) fail "root-run path $p is writable by group or others" ;; esac
	done
	for s in $SOCKETS; do
		[ -S "$s" ] && runuser -u "$BOX_USER" -- test -w "$s" && fail "box user can use container socket $s"
	done
	check_agent_channels
	if ! project=$(cat "$PROJECT_FILE" 2>/dev/null); then
		fail "$PROJECT_FILE is missing (the box's project mount point)"
	elif [ -n "$project" ] && mountpoint -q "$project"; then
		case ",$(findmnt -no OPTIONS "$project" | tail -n 1)," in *,nosuid,*) ;; *) fail "project mount $project allows setuid" ;; esac
	fi
}

# check_agent_channels: the box user reaches no root daemon of Lima's: Lima's guest agent, whose
# socket every local user can write and which dials any address it is asked to, runs as the box
# user (guestagent-ns), never as root; and no virtio port (virtio-serial) can be
# opened by the box user.
check_agent_channels() {
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = lima-guestagent ] || continue
		ids=$(awk '$1 == "Uid:" { print $2, $3 }' "$p/status" 2>/dev/null) || continue
		case " $ids " in *" 0 "*) fail "Lima's guest agent (pid ${p#/proc/}) runs as root: every local user can reach it through its socket" ;; esac
	done
	for s in /dev/virtio-ports/* /dev/vport*; do
		[ -e "$s" ] || continue
		# shellcheck disable=SC2016 # $1 is the inner shell's
		runuser -u "$BOX_USER" -- sh -c 'test -r "$1" || test -w "$1"' sh "$s" || continue
		fail "box user can open the virtio port $s (a channel to the host, root's only)"
	done
}

check_privileges() {
	[ "$MODE" = full ] && return 0
	check_groups
	check_sudo
	check_setid
	check_paths
}

# check_mounts refuses reverse-sshfs in every mode: the host side is an sftp-server that only
# starts in the shared directory (-d), so whoever drives the guest's sshfs (the box user owns
# that process) can ask for any path the host user can read or write.
check_mounts() {
	sshfs=$(findmnt -rn -t fuse.sshfs -o TARGET 2>/dev/null | head -n 5 | tr '\n' ' ')
	[ -z "$sshfs" ] || fail "reverse-sshfs mounts reach the whole host filesystem: $sshfs"
}

check_shadow() {
	[ "$SHADOW_EXPECTED" = 1 ] || return 0
	if [ ! -f "$SHADOW_EXPECT" ] || [ "$(stat -c %u "$SHADOW_EXPECT")" != 0 ]; then
		fail "git shadow expectations $SHADOW_EXPECT are missing or not owned by root"
		return 0
	fi
	# One line per mount: "ro PATH" or "rw PATH".
	while IFS= read -r line; do
		mp=${line#* }
		[ -n "$mp" ] || continue
		mountpoint -q "$mp" || fail "git shadow mount $mp is not in place"
	done <"$SHADOW_EXPECT"
	# The shadow's own check (rendered by gitshadow, installed by the shadow script): every
	# mount in place and read-only where it must be.
	if [ -x "$SHADOW_GUARD" ] && [ "$(stat -c %u "$SHADOW_GUARD")" = 0 ]; then
		"$SHADOW_GUARD" >/run/corral/shadow.out 2>&1 || true
		grep '^gitshadow: FAIL' /run/corral/shadow.out | head -n 5 >/run/corral/shadow.fail || true
		while IFS= read -r line; do
			fail "$line"
		done </run/corral/shadow.fail
	else
		fail "git shadow guard $SHADOW_GUARD is missing or not owned by root"
	fi
}

# check_cover verifies the hide and box_dirs mounts (package cover): each "hide PATH" covered,
# every mount there read-only; each "boxdir PATH" mounted; each "absent PATH" (a hidden path
# missing at boot) still missing or, once the guard daemon covered it, covered read-only. This
# check cannot cover a path itself: it refuses one that is there unhidden.
check_cover() {
	[ "$COVER_EXPECTED" = 1 ] || return 0
	if [ ! -f "$COVER_EXPECT" ] || [ "$(stat -c %u "$COVER_EXPECT")" != 0 ]; then
		fail "hide and box_dirs expectations $COVER_EXPECT are missing or not owned by root: the boot script did not finish"
		return 0
	fi
	while IFS= read -r line; do
		kind=${line%% *}
		p=${line#* }
		all=$(findmnt -rn -o VFS-OPTIONS --mountpoint "$p" 2>/dev/null)
		case $kind in
		hide)
			[ -n "$all" ] || fail "hidden path $p is not hidden"
			for o in $all; do
				case ",$o," in *,ro,*) ;; *) fail "hidden path $p is covered writable ($o)" ;; esac
			done
			;;
		boxdir) [ -n "$all" ] || fail "box_dirs directory $p is not mounted from the box's disk" ;;
		pin) [ -n "$all" ] || fail "directory $p holding a hidden path is not pinned" ;;
		absent)
			if [ -L "$p" ] || { [ -e "$p" ] && [ -z "$all" ]; }; then
				fail "hidden path $p appeared after the box booted and is not hidden: this check cannot hide it; the guard daemon does at the next session start, or restart the box"
			elif [ -e "$p" ]; then
				for o in $all; do
					case ",$o," in *,ro,*) ;; *) fail "hidden path $p is covered writable ($o)" ;; esac
				done
			fi
			;;
		esac
	done <"$COVER_EXPECT"
}

# attest runs the deep network and privilege checks as root and records the outcome for this
# boot in $ATTEST (root-owned, in root-owned /run/corral, replaced atomically): a "boot" line
# with the boot id, a "mode" line, one "fail" line per failing guard, and "end". It prints the
# report and exits 1 when privileges remain.
attest() {
	install -d -m 0755 -o root -g root /run/corral
	check_network
	net=$failures
	failures=""
	check_privileges
	priv=$failures
	failures="${net}${net:+${priv:+,}}${priv}"
	{
		printf 'boot %s\nmode %s\n' "$(cat /proc/sys/kernel/random/boot_id)" "$MODE"
		printf '%s' "$failures" | awk 'BEGIN { RS = "\",\""; ORS = "" } { sub(/^"/, ""); sub(/"$/, ""); if ($0 != "") print "fail " $0 "\n" }'
		echo end
	} >"$ATTEST.tmp"
	chmod 0644 "$ATTEST.tmp"
	mv -f "$ATTEST.tmp" "$ATTEST"
	# The exit status is the privilege part's: 20-lockdown stops on its own network failure.
	printf '{"ok":%s,"mode":"%s","failures":[%s]}\n' "$([ -z "$failures" ] && echo true || echo false)" "$MODE" "$failures"
	[ -z "$priv" ]
}

# session_check is the check before every session, as the box user: session-check (bash
# builtins only), which `git corral run` also sources in-band before its command. Other
# processes' groups are the attestation's business: after the drop no process of the box user
# can gain a group, and reading every /proc/PID/status costs a third of a second under
# emulation.
session_check() {
	exec /bin/bash /usr/local/libexec/corral/session-check json
}

case "${1:-}" in
"") check_network; check_privileges; check_mounts; check_shadow; check_cover ;;
attest)
	attest
	exit
	;;
session)
	session_check
	exit
	;;
network) check_network ;;
privileges) check_privileges ;;
held-groups)
	held_groups "$(id -u "$BOX_USER")"
	exit 0
	;;
*) fail "unknown guard check part $1" ;;
esac

ok=true
[ -z "$failures" ] || ok=false
printf '{"ok":%s,"mode":"%s","failures":[%s]}\n' "$ok" "$MODE" "$failures"
[ "$ok" = true ]
