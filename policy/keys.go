package policy

// This file is the one table of configuration keys. Rules:
//   - every key has exactly one trust class, a kind and a documentation sentence, and every
//     key that is not project-ok says why the repository may not set it freely (keys_test.go
//     fails otherwise, and SECURITY.md's trust table is generated from this table);
//   - a key is matched only by its exact spelling; anything else is unknown and refused;
//   - Order lists an enumeration's values from loosest to strictest: that is what "tighten"
//     means for it.

import (
	"slices"
	"sort"
	"time"
)

// Class is the trust class of a key: what the repository's own .corral.toml may do with it.
type Class int

const (
	// ProjectOK keys only shape the guest; the repository may set them to anything valid.
	ProjectOK Class = iota + 1
	// ProjectMayTighten keys the repository may only make stricter than the trusted layers
	// below it made them; restating the current value is fine.
	ProjectMayTighten
	// TrustedOnly keys touch host resources or credentials; the repository may not name them.
	TrustedOnly
	// ProjectMayNarrow keys (the [sandbox] table) exist only in the repository's file, which
	// may only narrow what the user's sandbox manifest grants (sandbox.go); no trusted file
	// holds them.
	ProjectMayNarrow
)

// String returns the class's name as documentation and errors spell it.
func (c Class) String() string {
	switch c {
	case ProjectOK:
		return "project-ok"
	case ProjectMayTighten:
		return "project-may-tighten"
	case TrustedOnly:
		return "trusted-only"
	case ProjectMayNarrow:
		return "project-may-narrow"
	}
	return "unclassified"
}

// Kind is the TOML shape of a key's value.
type Kind int

const (
	// KindString is a string, restricted to Order when Order is set.
	KindString Kind = iota + 1
	// KindInt is an integer.
	KindInt
	// KindBool is a boolean.
	KindBool
	// KindStrings is an array of strings; layers take the union.
	KindStrings
	// KindStringMap is a table of strings; layers merge by key.
	KindStringMap
	// KindDuration is a Go duration string such as "30m".
	KindDuration
	// KindRoutes is the [api_routes.NAME] tables of API broker routes (apiroutes.go).
	KindRoutes
)

// String names the kind as TOML users know it.
func (k Kind) String() string {
	return [...]string{"?", "string", "integer", "boolean", "array of strings", "table of strings", "duration string", "tables [api_routes.NAME]"}[k]
}

// KeySpec describes one configuration key.
type KeySpec struct {
	// Name is the key exactly as it must be written.
	Name string
	// Class is its trust class.
	Class Class
	// Kind is the shape of its value.
	Kind Kind
	// Doc says what the key does, in one or two sentences.
	Doc string
	// Why says what a hostile repository could do with it (required unless ProjectOK).
	Why string
	// Order lists the allowed values of an enumeration, loosest first.
	Order []string
	// Words are string spellings a boolean key also takes, with their values (snapshot = "auto").
	Words map[string]bool
	// Example is a TOML value for the commented template.
	Example string
	// field returns a pointer to the Config field the key fills.
	field func(c *Config) any
}

// keys is the table. Keep it sorted by class, then name, so the generated table reads well; the
// [sandbox] table's keys are in sandbox.go.
var keys = slices.Concat([]KeySpec{
	{Name: "box_dirs", Class: ProjectOK, Kind: KindStrings, Example: `["node_modules"]`,
		Doc:   "Repository-relative directories (`node_modules`, `target`, `.venv`) kept on the box's own disk, mounted over the project path in the guest at every boot: installs there avoid the shared mount, and the host never sees or runs what the box puts there (its own directory stays as it was; git corral makes a missing one, empty). Mount mode only. Never `.git`, never escaping the repository, no symlinks, no overlap with `hide` or the git shadow.",
		field: func(c *Config) any { return &c.BoxDirs }},
	{Name: "cpus", Class: ProjectOK, Kind: KindInt, Example: "2",
		Doc:   "Virtual CPUs of the box. From the repository, at most the host's CPU count.",
		field: func(c *Config) any { return &c.CPUs }},
	{Name: "default_agent", Class: ProjectOK, Kind: KindString, Example: `"claude"`,
		Doc:   "The command `start` runs in the box; empty means a login shell. It runs in the guest only.",
		field: func(c *Config) any { return &c.DefaultAgent }},
	{Name: "disk", Class: ProjectOK, Kind: KindString, Example: `"10GiB"`,
		Doc:   "Disk size of the box (KiB, MiB, GiB, TiB). From the repository, at most the free space of the host's $CORRAL_HOME.",
		field: func(c *Config) any { return &c.Disk }},
	{Name: "golden", Class: ProjectOK, Kind: KindBool, Example: "false",
		Doc:   "Start new boxes from a shared read-only golden base of the same guest recipe (image, packages, product guest scripts) and network mode, resuming the running state saved when it was built instead of booting (about a fifth of a boot's time under software emulation). On by default for boxes that mount their project on 9p (QEMU) and for clone-mode boxes, which mount nothing and resume a base of their own recipe; boxes with other mount types, extra mounts or covers are made from scratch. The first box of a recipe and mode boots once more to build the base (about 0.9 GB, one per mode, shared by every project); the git shadow and the repository's own provision scripts still run in every box. false, or --no-golden, makes a box from scratch.",
		field: func(c *Config) any { return &c.Golden }},
	{Name: "hide", Class: ProjectOK, Kind: KindStrings, Example: `["secrets/"]`,
		Doc:   "Repository-relative files and directories the box cannot read in mount mode: an empty root-owned file or directory is mounted read-only over each at every boot, and every session start checks it is in place. A boundary in broker and offline modes; in full mode the box user has sudo, so there it is hygiene. A path missing at boot that appears later is hidden at the next session start by the guard daemon (with CORRAL_GUARD_CHECK=inband or separate, sessions are refused while it exists unhidden, until the box restarts). Clone mode refuses a hidden path in any delivered commit. Never `.git`, never escaping the repository, no symlinks; on a case-insensitive host another spelling of the name is not hidden.",
		field: func(c *Config) any { return &c.Hide }},
	{Name: "idle_stop", Class: ProjectOK, Kind: KindDuration, Example: `"30m"`,
		Doc:   "Stop the box after this long without a session: a host-side watcher each session starts (`git corral watch`) stops it by itself within a few seconds of the limit, audited, with no later command needed; \"0s\" never stops it. It does not end a running session, and a box started outside git corral is stopped only by `git corral gc`.",
		field: func(c *Config) any { return &c.IdleStop }},
	{Name: "memory", Class: ProjectOK, Kind: KindString, Example: `"2GiB"`,
		Doc:   "Memory of the box (KiB, MiB, GiB, TiB). From the repository, at most the host's memory.",
		field: func(c *Config) any { return &c.Memory }},
	{Name: "packages", Class: ProjectOK, Kind: KindStrings, Example: `["postgresql-client"]`,
		Doc:   "Debian packages installed in the guest.",
		field: func(c *Config) any { return &c.Packages }},
	{Name: "provision", Class: ProjectOK, Kind: KindStrings, Example: `["scripts/provision.sh"]`,
		Doc:   "Repository-relative provision scripts run in the guest, in order, after review (`git corral review`). Regular files inside the repository only, no symlinks, never under `.git`.",
		field: func(c *Config) any { return &c.Provision }},
	{Name: "snapshot", Class: ProjectOK, Kind: KindBool, Example: `"auto"`, Words: map[string]bool{"auto": true, "off": false},
		Doc:   "`\"auto\"` (or true): take a disk snapshot of the stopped box when a session starts it, so that `git corral undo` can restore it; `\"off\"` (or false, the default) takes none.",
		field: func(c *Config) any { return &c.Snapshot }},
	{Name: "snapshots_keep", Class: ProjectOK, Kind: KindInt, Example: "3",
		Doc:   "How many automatic snapshots (`snapshot = \"auto\"`) a box keeps; older ones are deleted. Named snapshots are never deleted by this.",
		field: func(c *Config) any { return &c.SnapshotsKeep }},
	{Name: "stop_on_exit", Class: ProjectOK, Kind: KindBool, Example: "false",
		Doc:   "Stop the box when its last session (start, run, shell, an editor connection) ends, however it ends (a signal too): with several sessions, the last one's end stops it, within a few seconds, audited. It does not wait for git corral commands that are not sessions (status, diff, snapshot).",
		field: func(c *Config) any { return &c.StopOnExit }},

	{Name: "agent_state", Class: ProjectMayTighten, Kind: KindString, Order: []string{"shared", "seeded", "isolated"}, Example: `"isolated"`,
		Doc:   "How the agent's state (credentials, history) reaches the box: isolated (the default: the box starts empty; a login made in the box is kept on the host under $CORRAL_HOME/agents/state/BOX, never in ~/.claude and the like), seeded (copied in once from the host's agent directories, then kept as for isolated), shared (the host's agent directories are mounted writable; trusted layers only).",
		Why:   "shared mounts host agent state, credentials included, into the box",
		field: func(c *Config) any { return &c.AgentState }},
	{Name: "egress_presets", Class: ProjectMayTighten, Kind: KindStrings, Example: `["npm", "pypi", "github"]`,
		Doc:   "Named sets of hosts the broker allows in broker mode besides egress (npm, pypi, go, crates, github, debian, anthropic, openai, gemini; `git corral config` shows each host with the preset it came from, and docs/EGRESS-PRESETS.md how each list was made). Unset, every one of them applies; the first trusted layer that sets the key replaces that default (`[]` drops them all) and later trusted layers add names. The repository's list only narrows: a preset applies when the trusted layers and the repository both name it. An unknown name is refused.",
		Why:   "its own presets would open hosts the user did not choose; it may drop presets (a project that needs no registry), never add one",
		field: func(c *Config) any { return &c.EgressPresets }},
	{Name: "env", Class: ProjectMayTighten, Kind: KindStringMap, Example: `{ RUST_BACKTRACE = "1" }`,
		Doc:   "Literal variables set in the box's sessions, never expanded. The repository may add names, but not change a name a trusted layer set, nor set proxy or CORRAL_ variables.",
		Why:   "replacing a variable a trusted layer set, or a proxy variable, redirects what the user configured",
		field: func(c *Config) any { return &c.Env }},
	{Name: "git_identity", Class: ProjectMayTighten, Kind: KindString, Order: []string{"host", "corral", "none"}, Example: `"corral"`,
		Doc:   "The git identity commits made in a session carry, set per session as GIT_AUTHOR_* and GIT_COMMITTER_* (above the box's own git config, which is never written): host (the host's user.name and user.email as git reads them in the checkout; an unset one is not sent), corral (`git corral <corral@git-corral.invalid>` for every box) or none (nothing is set: the box's own config decides).",
		Why:   "host copies the user's name and e-mail into the box",
		field: func(c *Config) any { return &c.GitIdentity }},
	{Name: "git_push", Class: ProjectMayTighten, Kind: KindStrings, Example: `["refs/heads/corral/*"]`,
		Doc:   "Refs a box in broker mode may push to through the broker's git route of a git_tokens host: a full ref name, or one ending in `*`, which matches any rest of the name (`refs/heads/corral/*`). Empty, the default, allows no push; fetch and clone need no pattern. Trusted layers add patterns; the repository's own list only narrows them: a ref must match both. A delete needs git_push_delete, an update the broker cannot prove to be a fast-forward needs git_push_force, and one refused ref refuses the whole push. Outside broker mode git_tokens still hands the token to the box, and nothing filters pushes.",
		Why:   "its own patterns would let the box push, with the user's token, where the user did not allow (main, release tags)",
		field: func(c *Config) any { return &c.GitPush }},
	{Name: "network", Class: ProjectMayTighten, Kind: KindString, Order: []string{"full", "broker", "offline"}, Example: `"broker"`,
		Doc:   "Network mode: full (the guest's default network), broker (only the host-side egress broker, which decides every connection: the hosts of egress_presets and egress), offline (no egress). A new box defaults to broker; full is an explicit choice. A box made in full mode when full was the default keeps it, with a notice each session, until a layer names a mode.",
		Why:   "a looser mode lets the box reach more of the network than the user allowed",
		field: func(c *Config) any { return (*string)(&c.Network) }},
	{Name: "no_env_passthrough", Class: ProjectMayTighten, Kind: KindBool, Example: "true",
		Doc:   "When true, nothing from the host environment reaches the box, not even forward_env.",
		Why:   "false lets host variables the user forwards reach the box",
		field: func(c *Config) any { return &c.NoEnvPassthrough }},
	{Name: "profile", Class: ProjectMayTighten, Kind: KindString, Order: profileOrder(), Example: `"strict"`,
		Doc:   "A floor of guarantees (standard, strict, locked; see the profile table in SECURITY.md); every stricter profile includes the looser ones' guarantees.",
		Why:   "a looser profile removes guarantees the user chose",
		field: func(c *Config) any { return &c.Profile }},
	{Name: "readonly_project", Class: ProjectMayTighten, Kind: KindBool, Example: "false",
		Doc:   "Mount the project read-only in the box.",
		Why:   "false lets the box write the host's working tree",
		field: func(c *Config) any { return &c.ReadonlyProject }},
	{Name: "source", Class: ProjectMayTighten, Kind: KindString, Order: []string{"mount", "clone"}, Example: `"mount"`,
		Doc:   "How the code reaches the box: mount (the host checkout, mounted) or clone (a copy on the box's disk; the host has no working tree of it).",
		Why:   "mount exposes the host's working tree to the box",
		field: func(c *Config) any { return &c.Source }},

	{Name: "api_brokers", Class: TrustedOnly, Kind: KindStrings, Example: `["anthropic"]`,
		Doc: "API routes the box may use in broker mode, by name (built in: anthropic, openai, gemini, github, gitlab; others from [api_routes.NAME]); the broker adds the host's credential to their requests, and the variable holding it is never passed into the box.",
		Why: "spends the user's API credentials", field: func(c *Config) any { return &c.APIBrokers }},
	{Name: "api_routes", Class: TrustedOnly, Kind: KindRoutes, Example: `{ myapi = { upstream = "https://api.example.com", header = "Authorization", value_prefix = "Bearer ", value_env = "MYAPI_TOKEN", allow = ["GET /v1/*"] } }`,
		Doc: "API broker routes by name, one [api_routes.NAME] table each (upstream, header, value_prefix, value_env, allow, base_url_env, forge): the box calls http://NAME.api.corral/PATH through the broker, which adds the header with the secret of host variable value_env; forge = \"github\" or \"gitlab\" makes it a forge route, judged by forge_api_allow. Built-in routes (anthropic, openai, gemini, github, gitlab) need no table; one with their name changes only the fields it sets.",
		Why: "sends the user's API credentials to an upstream of the repository's choosing", field: func(c *Config) any { return &c.APIRoutes }},
	{Name: "clone_uncommitted", Class: TrustedOnly, Kind: KindBool, Example: "false",
		Doc: "With source = \"clone\": also send the checkout's uncommitted changes to tracked files into the box (as uncommitted changes there); untracked and ignored files are never sent.",
		Why: "sends host work that was never committed into the box", field: func(c *Config) any { return &c.CloneUncommitted }},
	{Name: "agent_login", Class: TrustedOnly, Kind: KindString, Example: `"work"`,
		Doc: "The host-held subscription login (`git corral agents login AGENT --as NAME`) the session's agent uses in broker mode: the broker adds its token to the agent's requests on the host, refreshing it once for every box, and the box holds only a placeholder. Empty, the default, uses the login named after the agent when there is one; \"none\" uses none. A named login that is missing or made for another agent stops the session.",
		Why: "chooses which of the user's subscription accounts the box spends", field: func(c *Config) any { return &c.AgentLogin }},
	{Name: "agent_min_age", Class: TrustedOnly, Kind: KindDuration, Example: `"168h"`,
		Doc: "How long an agent package version must have been on the npm registry before git corral installs it; \"0s\" turns the window off.",
		Why: "installs agent releases young enough to be hijacked and not yet pulled", field: func(c *Config) any { return &c.AgentMinAge }},
	{Name: "agent_versions", Class: TrustedOnly, Kind: KindStringMap, Example: `{ claude = "2.1.330" }`,
		Doc: "Agent name → the exact version git corral installs instead of the catalogue's pin.",
		Why: "chooses the code that runs with the agent's credentials", field: func(c *Config) any { return &c.AgentVersions }},
	{Name: "egress", Class: TrustedOnly, Kind: KindStrings, Example: `["github.com", "*.pypi.org", "10.0.0.0/8"]`,
		Doc: "The broker's allow-list beyond the presets' hosts (egress_presets): host, *.suffix, host:port, IP, CIDR, IP:port. A change holds from the next session on: a running broker started with another list is restarted.",
		Why: "widens what the box can reach through the host", field: func(c *Config) any { return &c.Egress }},
	{Name: "env_file", Class: TrustedOnly, Kind: KindString, Example: `"~/.config/corral/env"`,
		Doc: "A host dotenv file whose values are sent into sessions.",
		Why: "reads a host file and sends its secrets into the box", field: func(c *Config) any { return &c.EnvFile }},
	{Name: "env_from_host", Class: TrustedOnly, Kind: KindStringMap, Example: `{ GH_TOKEN = "GITHUB_TOKEN" }`,
		Doc: "Guest variable name → host variable whose value it gets.",
		Why: "copies host secrets into the box", field: func(c *Config) any { return &c.EnvFromHost }},
	{Name: "forge_api_allow", Class: TrustedOnly, Kind: KindStrings, Example: `["write"]`,
		Doc: "In broker mode, the classes of forge API request a forge route (the built-in github and gitlab routes, or one with forge set) lets through besides reads: merge (merging or auto-merging a pull request, merging branches, the merge queue, reviews, commit statuses and check runs), push (git data, contents, branch renames, releases, commits on a branch: refs moved without git), protection (branch protection, rulesets, repository settings and deletion, deploy keys, webhooks, collaborators, secrets, organisation and account administration), write (GraphQL mutations of no other class, such as a comment; REST writes of no class follow the route's allow patterns). Empty, the default, refuses all four; reads are always allowed.",
		Why: "lets the box merge, move refs or change protection with the user's token, around git_push and branch protection", field: func(c *Config) any { return &c.ForgeAPIAllow }},
	{Name: "forward_env", Class: TrustedOnly, Kind: KindStrings, Example: `["TERM"]`,
		Doc: "Host variables passed into sessions by name.",
		Why: "copies host secrets into the box", field: func(c *Config) any { return &c.ForwardEnv }},
	{Name: "git_push_delete", Class: TrustedOnly, Kind: KindBool, Example: "false",
		Doc: "In broker mode, let a push through a git route delete refs that git_push allows; off, every delete is refused.",
		Why: "lets the box delete the user's branches and tags with the user's token", field: func(c *Config) any { return &c.GitPushDelete }},
	{Name: "git_push_force", Class: TrustedOnly, Kind: KindBool, Example: "false",
		Doc: "In broker mode, let a push through a git route update refs that git_push allows without a fast-forward the broker can prove (force pushes, rewinds); off, such updates are refused.",
		Why: "lets the box rewrite the history of the user's branches with the user's token", field: func(c *Config) any { return &c.GitPushForce }},
	{Name: "git_tokens", Class: TrustedOnly, Kind: KindStringMap, Example: `{ "github.com" = "GITHUB_TOKEN" }`,
		Doc: "Git host → host variable holding a token for it. In broker mode the token stays on the host: the broker adds it to the box's git requests to that host, which the box's git sends to http://HOST.git.corral (fetch and clone; pushes as git_push allows). In full mode the box's git credential helper offers it to the box.",
		Why: "hands host credentials to the box", field: func(c *Config) any { return &c.GitTokens }},
	{Name: "image", Class: TrustedOnly, Kind: KindString, Example: `""`,
		Doc: "A built base image by the name `git corral image list` prints; an unknown name stops the session before anything boots. It applies when a box is created; an existing box keeps its disk. Empty means the image of this version's recipe.",
		Why: "makes the host download and boot an image of the repository's choosing", field: func(c *Config) any { return &c.Image }},
	{Name: "mounts", Class: TrustedOnly, Kind: KindStrings, Example: `["~/datasets:/srv/datasets"]`,
		Doc: "Extra host directories mounted into the box, HOSTPATH:GUESTPATH[:ro|:rw], read-only unless :rw is written. GUESTPATH lies inside /srv, /mnt, /opt, /media or /data. Refused: a host path that is, holds or lies inside what the host trusts ($HOME itself, ~/.ssh, ~/.gnupg, cloud credential directories, $CORRAL_HOME, /, /etc…), a socket or device, anything reaching them through a symlink. A change takes effect only in a new box.",
		Why: "exposes host files to the box", field: func(c *Config) any { return &c.Mounts }},
	{Name: "name", Class: TrustedOnly, Kind: KindString, Example: `""`,
		Doc: "The box every command acts on in this checkout (start, run, shell, stop, status, delete, info, ports, egress, snapshot, undo, logs…), instead of the one derived from the checkout's path ([a-z][a-z0-9-]*); --box still wins. Read only from the trusted layers. A box made for another checkout is refused, never shared.",
		Why: "could select another project's box and its state", field: func(c *Config) any { return &c.Name }},
	{Name: "ports", Class: TrustedOnly, Kind: KindStrings, Example: `["8080:8080"]`,
		Doc: "Ports forwarded from the host's 127.0.0.1 (never another address) to the box, HOSTPORT:GUESTPORT, HOSTPORT at least 1024; no other guest port is forwarded by the box itself. An editor's SSH connection through git corral ssh-config may forward (ssh -L) only to a GUESTPORT listed here, and without ports to none; its ssh -R and unix-socket forwards are refused. A HOSTPORT already in use is refused before the box starts. A change takes effect only in a new box.",
		Why: "opens listeners on the host", field: func(c *Config) any { return &c.Ports }},
	{Name: "ssh_agent", Class: TrustedOnly, Kind: KindBool, Example: "false",
		Doc: "Forward the host's SSH agent into sessions.",
		Why: "lets the box sign with the user's SSH keys", field: func(c *Config) any { return &c.SSHAgent }},
	{Name: "timeout", Class: TrustedOnly, Kind: KindDuration, Example: `"0s"`,
		Doc: "The default of `run --timeout` (the flag, when given, wins); \"0s\" means none. It does not limit `start` or `shell`.",
		Why: "changes how long host-side commands wait on the box", field: func(c *Config) any { return &c.Timeout }},
}, sandboxKeys)

// retiredKeys are keys no file may hold any more, with what to do instead: a file naming one is
// refused with this sentence rather than as an unknown key.
//
// protect_git_metadata: git metadata is always shadowed in the box and verified from the host.
// The key was project-may-tighten and every profile, `standard` (the loosest and the default)
// included, floored it at true, so `false` could never take effect in any configuration; making
// it reachable would take a profile below standard whose only difference is that the box may
// write hooks and git config the host then executes (SECURITY.md, "Git metadata").
var retiredKeys = map[string]string{
	"protect_git_metadata": "git metadata is always shadowed in the box and verified from the host after every session, and no key turns that off; delete this line",
}

// Keys returns every key, sorted by class then name.
func Keys() []KeySpec {
	out := append([]KeySpec(nil), keys...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Class != out[j].Class {
			return out[i].Class < out[j].Class
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// lookupKey returns the spec of the key spelled exactly name.
func lookupKey(name string) *KeySpec {
	for i := range keys {
		if keys[i].Name == name {
			return &keys[i]
		}
	}
	return nil
}

// rank returns v's position in the spec's tightening order (-1 when it is not in it). Booleans
// rank false below true.
func (k *KeySpec) rank(v any) int {
	switch x := v.(type) {
	case bool:
		if x {
			return 1
		}
		return 0
	case string:
		for i, o := range k.Order {
			if o == x {
				return i
			}
		}
	}
	return -1
}

// durationOK is the range a duration key accepts.
func durationOK(d time.Duration) bool { return d >= 0 && d <= 365*24*time.Hour }
