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
//   - The shell parses what it runs (a line costs about 0.15 ms under TCG), so the part every
//     session runs is a few lines; the text that makes links (agentLink) travels as a quoted
//     argument, read as a string, and is evaluated only when a link is to be made. Both are
//     this file's constants; values are only ever arguments.

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

// agentPrelude runs in the session's shell (vm.Prelude) with LINK SET ROOT [AGENT REL]... as
// "$@": LINK is agentLink, SET the stamp's line for ROOT and the pairs (linkSet), ROOT
// vm.AgentStateGuest or vm.AgentSharedGuest. With every link made for SET it runs only test
// and read (shell builtins) on the box's own disk.
const agentPrelude = `if [ -d ` + vm.AgentBinGuest + ` ]; then PATH=` + vm.AgentBinGuest + `:$PATH; export PATH; fi
corral_link=$1 corral_set=$2 corral_seen=
shift 2
[ -f "$HOME/` + agentLinkStamp + `" ] && IFS= read -r corral_seen <"$HOME/` + agentLinkStamp + `"
if [ "$corral_seen" = "$corral_set" ]; then
	while [ "$#" -ge 3 ] && [ -L "$HOME/$3" ]; do corral_r=$1; shift 3; set -- "$corral_r" "$@"; done
fi
[ "$#" -ge 3 ] && eval "$corral_link"`

// agentLinkStamp is where, under the box user's home, agentLink records the set it made.
const agentLinkStamp = ".cache/corral/agent-links"

// agentLink makes the links agentPrelude did not find in place, from its "$@" (ROOT, then the
// pairs from the first one to check) and corral_set and corral_seen; once every link of a new
// set is made it records the set. It runs mkdir and ln only to make a link.
const agentLink = `corral_state=$1 corral_bad=
shift
while [ "$#" -ge 2 ]; do
	corral_agent=$1 corral_l=$HOME/$2 corral_target=$corral_state/$1/$2
	shift 2
	[ -d "$corral_state/$corral_agent" ] || continue
	if [ -L "$corral_l" ]; then
		[ -e "$corral_target" ] && [ "$corral_l" -ef "$corral_target" ] && continue
	elif [ -e "$corral_l" ]; then
		printf '%s\n' "corral: warning: $corral_l is the box's own; $corral_agent's state there is not kept on the host" >&2
		continue
	fi
	corral_dir=${corral_l%/*}
	{ [ -d "${corral_dir:-/}" ] || mkdir -p -- "${corral_dir:-/}"; } && ln -sfn -- "$corral_target" "$corral_l" || corral_bad=1
done
if [ "$corral_seen" != "$corral_set" ] && [ -z "$corral_bad" ]; then
	corral_dir=$HOME/` + agentLinkStamp + `
	{ [ -d "${corral_dir%/*}" ] || mkdir -p -- "${corral_dir%/*}"; } && { printf '%s\n' "$corral_set" >"$corral_dir"; } 2>/dev/null
fi`

// linkSet is the line agentLink records for root and pairs: each word after a space.
func linkSet(root string, pairs []string) string {
	return strings.Join(append([]string{root}, pairs...), " ")
}

// agentLinks is agentPrelude with the state links of linked, into root. Names and state
// paths come from the catalogue; one that is not a clean relative path (or holds a newline or
// NUL) is refused rather than passed on.
func agentLinks(root string, linked []agents.Agent) (vm.Prelude, error) {
	if root != vm.AgentStateGuest && root != vm.AgentSharedGuest {
		return vm.Prelude{}, fmt.Errorf("agent state root %q is not %s or %s", root, vm.AgentStateGuest, vm.AgentSharedGuest)
	}
	var pairs []string
	for _, a := range linked {
		for _, sp := range a.StatePaths() {
			if err := checkStatePath(a.Name, sp.Rel); err != nil {
				return vm.Prelude{}, err
			}
			pairs = append(pairs, a.Name, sp.Rel)
		}
	}
	return vm.Prelude{Script: agentPrelude, Args: append([]string{agentLink, linkSet(root, pairs), root}, pairs...)}, nil
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
