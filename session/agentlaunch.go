package session

// This file launches a session's command with the agents in reach. Its rules:
//
//   - The session's agent is the one the command's first word names (claude,
//     /opt/corral/agents/bin/codex), else the one default_agent's first word names; a command
//     naming neither has none (its auth variables are not forwarded, agentenv.go).
//   - Every command of a box with agent mounts runs after agentPrelude, a fixed shell text run
//     in the session's own shell (vm.Prelude) that takes every value as an argument (nothing
//     is interpolated): it puts the store's launchers (vm.AgentBinGuest) first on PATH and
//     links each prepared agent's state paths in the box user's home (~/.claude) to its
//     directory on the state mount; then the command runs (a login shell when there is none).
//   - The links are made in the session, not at boot: the box user can replace them, which only
//     sends that agent's state to the box's own disk (nothing of the host is reached through
//     them); a real file or directory already in their place is left alone, with a warning.
//   - Once the links are made the prelude starts no process and touches no mount: in an
//     emulated box each process costs tens of milliseconds and each look at the 9p state mount
//     a round trip to the host, and every command would pay them. After a session made every
//     link of a set (root and state paths) it writes that set to ~/.cache/corral/agent-links;
//     a later session with the same set only checks that each is still a symlink (the box's
//     own disk) and makes again the first that is not and every one after it. A link the box
//     user re-pointed stays re-pointed while the set is unchanged, as the rule above allows;
//     one removed, or replaced by a file, is seen.

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

// agentPrelude runs in the session's shell (vm.Prelude) with ROOT [AGENT REL]... as "$@",
// ROOT being vm.AgentStateGuest or vm.AgentSharedGuest. Only shell builtins run while every
// link is in place; mkdir and ln only to make one. Its variables start with corral_.
const agentPrelude = `corral_state=$1
shift
if [ -d ` + vm.AgentBinGuest + ` ]; then
	PATH=` + vm.AgentBinGuest + `:$PATH
	export PATH
fi
corral_stamp=$HOME/.cache/corral/agent-links corral_seen= corral_want=$corral_state corral_bad=
for corral_a; do
	corral_want="$corral_want $corral_a"
done
[ -f "$corral_stamp" ] && IFS= read -r corral_seen <"$corral_stamp"
if [ "$corral_seen" = "$corral_want" ]; then
	while [ "$#" -ge 2 ] && [ -L "$HOME/$2" ]; do
		shift 2
	done
fi
while [ "$#" -ge 2 ]; do
	corral_agent=$1 corral_link=$HOME/$2 corral_target=$corral_state/$1/$2
	shift 2
	[ -d "$corral_state/$corral_agent" ] || continue
	if [ -L "$corral_link" ]; then
		[ -e "$corral_target" ] && [ "$corral_link" -ef "$corral_target" ] && continue
	elif [ -e "$corral_link" ]; then
		printf '%s\n' "corral: warning: $corral_link is the box's own; $corral_agent's state there is not kept on the host" >&2
		continue
	fi
	corral_dir=${corral_link%/*}
	{ [ -d "${corral_dir:-/}" ] || mkdir -p -- "${corral_dir:-/}"; } && ln -sfn -- "$corral_target" "$corral_link" || corral_bad=1
done
if [ "$corral_seen" != "$corral_want" ] && [ -z "$corral_bad" ]; then
	{ [ -d "${corral_stamp%/*}" ] || mkdir -p -- "${corral_stamp%/*}"; } && { printf '%s\n' "$corral_want" >"$corral_stamp"; } 2>/dev/null
fi`

// agentLinks is agentPrelude with the state links of linked, into root. Names and state
// paths come from the catalogue; one that is not a clean relative path (or holds a newline or
// NUL) is refused rather than passed on.
func agentLinks(root string, linked []agents.Agent) (vm.Prelude, error) {
	if root != vm.AgentStateGuest && root != vm.AgentSharedGuest {
		return vm.Prelude{}, fmt.Errorf("agent state root %q is not %s or %s", root, vm.AgentStateGuest, vm.AgentSharedGuest)
	}
	p := vm.Prelude{Script: agentPrelude, Args: []string{root}}
	for _, a := range linked {
		for _, sp := range a.StatePaths() {
			if err := checkStatePath(a.Name, sp.Rel); err != nil {
				return vm.Prelude{}, err
			}
			p.Args = append(p.Args, a.Name, sp.Rel)
		}
	}
	return p, nil
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
