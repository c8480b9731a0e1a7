#!/bin/bash
# Measure which hosts a typical project's installs contact, through git corral's own broker: its
# egress log is the record (one line per connection, with the host the client asked for). The
# results and how to read them are in docs/EGRESS-PRESETS.md.
#
# Usage: scripts/measure-egress.sh [GIT_CORRAL] [WORKDIR]
#   GIT_CORRAL  the git-corral binary (default: built from this tree into WORKDIR)
#   WORKDIR     scratch directory (default: a new one under /tmp), kept for inspection
# Needs: npm, go, apt-get (Debian), and the network those clients use. Each step runs only when
# its client is installed; a step whose registry is unreachable says so and the rest go on.
#
# The broker allows every name in the common top-level domains, so the log lists every host a
# client asked for rather than only the ones a preset names. On machines whose resolver answers
# public names with a private or documentation address (an intercepting sandbox: this one
# answers 203.0.113.80), the broker refuses such answers as rebinding; MEASURE_ALLOW_ADDR adds an
# address entry for them (default 203.0.113.0/24, TEST-NET-3, which nothing public uses).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${2:-$(mktemp -d /tmp/measure-egress.XXXXXX)}
mkdir -p "$work/home"
bin=${1:-}
if [ -z "$bin" ]; then
	bin=$work/git-corral
	(cd "$here" && go build -o "$bin" ./cmd/git-corral)
fi
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret" # hex: fits a proxy URL
chmod 600 "$work/secret"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
allow="*.org,*.com,*.io,*.net,*.dev,*.sh,${MEASURE_ALLOW_ADDR:-203.0.113.0/24}"
CORRAL_HOME=$work/home "$bin" --box measure broker serve --listen "127.0.0.1:$port" \
	--secret-file "$work/secret" --log "$work/egress.log" --allow "$allow" >"$work/broker.out" 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null' EXIT
sleep 1
proxy="http://corral:$(cat "$work/secret")@127.0.0.1:$port"
export HTTPS_PROXY=$proxy HTTP_PROXY=$proxy https_proxy=$proxy http_proxy=$proxy

step() { echo "=== $1"; : >"$work/egress.log.mark"; wc -l <"$work/egress.log" >"$work/egress.log.mark"; }
hosts() { # the hosts logged since the step began, with connection count and decision
	tail -n +"$(($(cat "$work/egress.log.mark") + 1))" "$work/egress.log" |
		python3 -c 'import sys, json, collections
c = collections.Counter((e["host"], e["port"], e["decision"]) for e in map(json.loads, sys.stdin))
for (h, p, d), n in sorted(c.items()): print(f"  {d:5} {h}:{p}  ({n} connections)")'
}

if command -v npm >/dev/null; then
	step "npm install of a small typical Node project (express, lodash; typescript, esbuild, vitest, eslint)"
	mkdir -p "$work/node" && cd "$work/node"
	cat >package.json <<'EOF'
{ "name": "measure", "version": "1.0.0", "private": true,
  "dependencies": { "express": "^4.21.0", "lodash": "^4.17.21" },
  "devDependencies": { "typescript": "^5.6.0", "esbuild": "^0.24.0", "vitest": "^2.1.0", "eslint": "^9.12.0" } }
EOF
	: >"$work/npmrc-user" && : >"$work/npmrc-global"
	# npm's own defaults (audit and the update check on), not this machine's npmrc files.
	npm_config_userconfig=$work/npmrc-user npm_config_globalconfig=$work/npmrc-global npm_config_cache=$work/npm-cache \
		npm install --no-fund 2>&1 | tail -3 || echo "npm install failed"
	echo "  $(find node_modules -maxdepth 2 -name package.json | wc -l) packages installed"
	hosts
fi

if command -v go >/dev/null; then
	step "go mod download with the default GOPROXY and GOSUMDB ($(go env GOPROXY); $(go env GOSUMDB))"
	mkdir -p "$work/go" && cd "$work/go"
	printf 'module measure\n\ngo 1.22\n\nrequire (\n\tgithub.com/spf13/pflag v1.0.5\n\tgolang.org/x/text v0.14.0\n\tgopkg.in/yaml.v3 v3.0.1\n)\n' >go.mod
	env -u GOFLAGS GOPROXY=https://proxy.golang.org,direct GOSUMDB=sum.golang.org GONOSUMDB= GOPRIVATE= \
		GOMODCACHE="$work/gomodcache" GOFLAGS=-modcacherw go mod download -x 2>&1 | grep -c '^# get' | sed 's/^/  requests: /' || echo "go mod download failed"
	hosts
fi

if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
	mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	step "apt-get update and download of one package through the broker, as the packages step does (mirror ${mirror:-unknown})"
	mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial"
	apt-get -q -o "Acquire::http::Proxy=$proxy" -o "Acquire::https::Proxy=$proxy" -o "Dir::State::Lists=$work/apt/lists" \
		-o "Dir::Cache::Archives=$work/apt/archives" -o Debug::NoLocking=1 update 2>&1 | tail -1 || echo "apt-get update failed"
	(cd "$work/apt" && apt-get -q -o "Acquire::http::Proxy=$proxy" -o "Dir::State::Lists=$work/apt/lists" \
		-o Debug::NoLocking=1 download hello 2>&1 | tail -1) || echo "apt-get download failed"
	hosts
fi
echo "egress log: $work/egress.log"
