#!/bin/sh
# git corral 25-packages: the Debian packages policy allowed, installed as root after the
# lockdown and before the privilege drop (which then strips whatever they added). Skips apt when
# every package is installed already. Broker mode fetches through the broker as an HTTP proxy;
# offline mode cannot fetch and fails when a package is missing.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
MODE={{.Mode}}
PROXY=''
if [ "$MODE" = broker ]; then
	# This box's broker port, from the file 05-box wrote (nft.go says why it is not here).
	port=$(sed -n 's/^define broker_port = \([1-9][0-9]*\)$/\1/p' {{.BrokerPortFile}} 2>/dev/null) || port=
	[ -n "$port" ] || { echo "corral: {{.BrokerPortFile}} names no broker port" >&2; exit 1; }
	PROXY="http://{{.Gateway}}:$port"
fi
set -- {{.Packages}}

# Lima goes on to the next provision script when one fails: no apt without the lockdown.
if ! report=$(/usr/local/libexec/corral/guard-check network); then
	echo "corral: the $MODE lockdown does not hold, not installing packages: $report" >&2
	exit 1
fi

missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -n "$missing" ] || { echo "corral: packages already installed"; exit 0; }
if [ "$MODE" = offline ]; then
	echo "corral: packages missing in an offline box:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if [ -n "$PROXY" ]; then
	apt-get -o "Acquire::http::Proxy=$PROXY" -o "Acquire::https::Proxy=$PROXY" update
	apt-get -o "Acquire::http::Proxy=$PROXY" -o "Acquire::https::Proxy=$PROXY" install -y --no-install-recommends "$@"
else
	apt-get update
	apt-get install -y --no-install-recommends "$@"
fi
