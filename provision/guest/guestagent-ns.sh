#!/bin/sh
# git corral guestagent-ns: runs Lima's guest agent as the box user instead of root (issue #29).
# Installed root-owned at /usr/local/libexec/corral/guestagent-ns by 10-base and started by the
# drop-in lima-guestagent.service.d/50-corral.conf:
#   prepare   as root (ExecStartPre=+): the agent's socket directory /run/corral-ga, owned by
#             the box user, and /run/lima-guestagent.sock, a root-owned link into it, the path
#             Lima's host agent forwards over SSH (as the box user).
#   run       as the box user inside `unshare --user --map-root-user --mount`: the agent checks
#             that it runs as root, so it gets a user namespace of its own in which it is "root"
#             and may do nothing the box user may not; /run is the socket directory there, and
#             PATH holds no iptables (it would fail there; git corral's ports need only the
#             listening sockets the agent reads from /proc). The agent's command is Lima's own
#             unit's ExecStart, so its transport flags stay Lima's.
# Lima's guest agent dials any address it is asked to and sets file times for whoever reaches
# its socket, which every local user can (the pinned Lima makes it world-writable): run as root,
# it handed the box user root's connections (to systemd's private socket, say).
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
DIR=/run/corral-ga
BOX_USER={{.User}}
UNIT=/etc/systemd/system/lima-guestagent.service
case "${1:-}" in
prepare)
	install -d -m 0700 -o "$BOX_USER" -g "$(id -gn "$BOX_USER")" "$DIR"
	rm -f "$DIR/lima-guestagent.sock"
	ln -sfn "$DIR/lima-guestagent.sock" /run/lima-guestagent.sock
	;;
run)
	[ "$(id -u)" = 0 ] || { echo "guestagent-ns: run inside a user namespace mapped to root" >&2; exit 1; }
	cmd=$(sed -n 's/^ExecStart=//p' "$UNIT" | head -n 1)
	# Lima writes "BINARY daemon [--vsock-port N | --virtio-port NAME]": words without shell
	# characters, split below with globbing off.
	case "$cmd" in
	*[!A-Za-z0-9._=/\ -]* | '') echo "guestagent-ns: unexpected ExecStart in $UNIT: $cmd" >&2; exit 1 ;;
	esac
	mount --bind "$DIR" /run
	set -f
	# shellcheck disable=SC2086 # one word per argument, as systemd split them
	exec env -i PATH=/nonexistent/corral-no-iptables $cmd
	;;
*)
	echo "usage: guestagent-ns prepare|run" >&2
	exit 2
	;;
esac
