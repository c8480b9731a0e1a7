package session

// This file launches a session's command with the agents in reach. Its rules:
//
//   - The session's agent is the one the command's first word names (claude,
//     /opt/corral/agents/bin/codex), else the one default_agent's first word names; a command
//     naming neither has none (its auth variables are not forwarded, agentenv.go).
//   - Every command of a box with agent mounts runs through agentPrelude, a fixed shell text
//     that takes every value as an argument (nothing is interpolated): it puts the store's
//     launchers (vm.AgentBinGuest) first on PATH, links each prepared agent's state paths in
//     the box user's home (~/.claude) to its directory on the state mount, then execs the
//     command (a login shell when there is none).
//   - The links are made in the session, not at boot: the box user can replace them, which only
//     sends that agent's state to the box's own disk (nothing of the host is reached through
//     them); a real file or directory already in their place is left alone, with a warning.

import (
	"fmt"
	"path"
	"strings"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/vm"
)

// AgentFor returns the session's agent for argv and default_agent (see the rules above).
func AgentFor(argv []string, defaultAgent string) (agents.Agent, bool) {
	for _, words := range [][]string{argv, strings.Fields(defaultAgent)} {
		if len(words) == 0 {
			continue
		}
		if a, err := agents.Lookup(path.Base(words[0])); err == nil {
			return a, true
		}
	}
	return agents.Agent{}, false
}

// agentPrelude runs as sh -c agentPrelude corral-agent ROOT [AGENT REL]... -- [CMD ARG...], ROOT
// being vm.AgentStateGuest or vm.AgentSharedGuest.
const agentPrelude = `state=$1
shift
if [ -d ` + vm.AgentBinGuest + ` ]; then
	PATH=` + vm.AgentBinGuest + `:$PATH
	export PATH
fi
while [ "$#" -ge 2 ] && [ "$1" != -- ]; do
	agent=$1 rel=$2
	shift 2
	[ -d "$state/$agent" ] || continue
	link=$HOME/$rel target=$state/$agent/$rel
	[ "$(readlink -- "$link" 2>/dev/null)" = "$target" ] && continue
	if [ -e "$link" ] && [ ! -L "$link" ]; then
		echo "corral: warning: $link is the box's own; $agent's state there is not kept on the host" >&2
		continue
	fi
	mkdir -p -- "$(dirname -- "$link")" && ln -sfn -- "$target" "$link"
done
[ "${1:-}" = -- ] && shift
if [ "$#" -eq 0 ]; then
	exec "${SHELL:-/bin/sh}" -l
fi
case $(command -v -- "$1") in
/*) exec "$@" ;;
esac
"$@"
`

// agentArgv wraps argv in agentPrelude with the state links of linked, into root. Names and state paths
// come from the catalogue; one that is not a clean relative path (or holds a newline or NUL) is
// refused rather than passed on.
func agentArgv(argv []string, root string, linked []agents.Agent) ([]string, error) {
	if root != vm.AgentStateGuest && root != vm.AgentSharedGuest {
		return nil, fmt.Errorf("agent state root %q is not %s or %s", root, vm.AgentStateGuest, vm.AgentSharedGuest)
	}
	out := []string{"/bin/sh", "-c", agentPrelude, "corral-agent", root}
	for _, a := range linked {
		for _, p := range a.StatePaths() {
			if err := checkStatePath(a.Name, p.Rel); err != nil {
				return nil, err
			}
			out = append(out, a.Name, p.Rel)
		}
	}
	return append(append(out, "--"), argv...), nil
}

// checkStatePath refuses an agent name that is not one path element, and a state path that is
// empty, absolute, unclean, leaves the home, or holds a newline or NUL.
func checkStatePath(name, rel string) error {
	if name == "" || name == "--" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00\n\r") ||
		rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") ||
		strings.ContainsAny(rel, "\x00\n\r") {
		return fmt.Errorf("agent %q: state path %q is not a clean relative path inside the home", name, rel)
	}
	return nil
}
