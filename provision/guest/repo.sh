#!/bin/sh
# git corral {{.Name}}: the repository's provision script {{.PathComment}},
# as approved (sha256 {{.SHA256}}). The approved bytes are written to a root-owned file and run
# from there, never from the project mount. Runs at every boot.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022
RUN_AS={{.RunAs}}
BOX_USER={{.User}}
PROJECT_DIR={{.ProjectDir}}
SCRIPT=/etc/corral/provision/{{.File}}
install -d -m 0755 -o root -g root /etc/corral /etc/corral/provision
tmp=$(mktemp "$SCRIPT.XXXXXX")
base64 -d >"$tmp" <<'CORRAL_APPROVED_BYTES'
{{.Base64}}
CORRAL_APPROVED_BYTES
chmod 0755 "$tmp"
mv -f "$tmp" "$SCRIPT"
[ "$(sha256sum <"$SCRIPT" | cut -d' ' -f1)" = {{.SHA256}} ] || { echo "corral: $SCRIPT does not match its approval" >&2; exit 1; }

# Lima goes on to the next provision script when one fails: refuse unless every guard of this
# box's mode holds right now.
if ! report=$(/usr/local/libexec/corral/guard-check); then
	echo "corral: guards do not hold, not running $SCRIPT: $report" >&2
	exit 1
fi

home=$(getent passwd "$BOX_USER" | cut -d: -f6)
cd "$PROJECT_DIR"
if [ "$RUN_AS" = root ]; then
	exec env -i HOME=/root USER=root LOGNAME=root PATH="$PATH" CORRAL_PROJECT_DIR="$PROJECT_DIR" "$SCRIPT"
fi
exec runuser -u "$BOX_USER" -- env -i HOME="$home" USER="$BOX_USER" LOGNAME="$BOX_USER" \
	PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="/run/user/$(id -u "$BOX_USER")" \
	CORRAL_PROJECT_DIR="$PROJECT_DIR" "$SCRIPT"
