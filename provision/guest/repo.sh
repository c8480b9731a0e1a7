#!/bin/sh
# git corral {{.Name}}: the repository's provision script {{.PathComment}},
# as approved (sha256 {{.SHA256}}), with the approved files it pulls in. The approved bytes are
# written to a root-owned tree, each file at its repository path, and the script runs from
# there with the tree's top as its working directory: nothing it sources or runs by a relative
# path (or beside itself) is read from the project mount. Runs at every boot.
# Repository paths are single-quoted on purpose (ShellQuote): nothing in them expands.
# shellcheck disable=SC2016
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022
RUN_AS={{.RunAs}}
BOX_USER={{.User}}
PROJECT_DIR={{.ProjectDir}}
TREE=/etc/corral/provision/{{.File}}.d
install -d -m 0755 -o root -g root /etc/corral /etc/corral/provision
rm -f /etc/corral/provision/{{.File}}
new=$(mktemp -d "$TREE.XXXXXX")
chmod 0755 "$new"
# put REL SHA256: the approved bytes of REL, base64 on stdin, into the new tree.
put() {
	mkdir -p "$new/$(dirname "$1")"
	base64 -d >"$new/$1"
	chmod 0755 "$new/$1"
	[ "$(sha256sum <"$new/$1" | cut -d' ' -f1)" = "$2" ] || { echo "corral: $1 does not match its approval" >&2; rm -rf "$new"; exit 1; }
}
{{range .Files}}put {{.Rel}} {{.SHA256}} <<'CORRAL_APPROVED_BYTES'
{{.Base64}}
CORRAL_APPROVED_BYTES
{{end}}rm -rf "$TREE"
mv "$new" "$TREE"
SCRIPT="$TREE"/{{.Script}}

# Lima goes on to the next provision script when one fails: refuse unless every guard of this
# box's mode holds right now.
if ! report=$(/usr/local/libexec/corral/guard-check); then
	echo "corral: guards do not hold, not running $SCRIPT: $report" >&2
	exit 1
fi

home=$(getent passwd "$BOX_USER" | cut -d: -f6)
cd "$TREE"
if [ "$RUN_AS" = root ]; then
	exec env -i HOME=/root USER=root LOGNAME=root PATH="$PATH" CORRAL_PROJECT_DIR="$PROJECT_DIR" "$SCRIPT"
fi
exec runuser -u "$BOX_USER" -- env -i HOME="$home" USER="$BOX_USER" LOGNAME="$BOX_USER" \
	PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="/run/user/$(id -u "$BOX_USER")" \
	CORRAL_PROJECT_DIR="$PROJECT_DIR" "$SCRIPT"
