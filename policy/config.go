package policy

import (
	"slices"
	"time"
)

// This file is the contract other packages build on: the effective configuration's Go shape.
// Loading, layering, trust classes and origins live in the other files of this package.

// Network is a box's network mode, from loosest to strictest.
type Network string

const (
	// NetworkFull is the guest's default user-mode network.
	NetworkFull Network = "full"
	// NetworkBroker allows only the box's broker on the host gateway.
	NetworkBroker Network = "broker"
	// NetworkOffline allows no egress at all.
	NetworkOffline Network = "offline"
)

// Config is the effective configuration of one box after every layer is applied. Field comments
// name the TOML key.
type Config struct {
	// Network is `network`: full, broker or offline.
	Network Network
	// Profile is `profile`, a floor of guarantees: standard, strict or locked (profiles.go).
	Profile string
	// CPUs is `cpus`.
	CPUs int
	// Memory is `memory`, a Lima size such as "4GiB".
	Memory string
	// Disk is `disk`, a Lima size such as "20GiB".
	Disk string
	// Packages is `packages`: Debian packages installed in the guest.
	Packages []string
	// Provision is `provision`: repository-relative provision scripts, in order.
	Provision []string
	// ReadonlyProject is `readonly_project`: mount the project read-only.
	ReadonlyProject bool
	// Source is `source`: "mount" or "clone".
	Source string
	// Image is `image` (trusted-only): the base image; "" means the locally built default.
	Image string
	// Egress is `egress` (trusted-only): the broker's allow-list entries.
	Egress []string
	// DefaultAgent is `default_agent`: the command `start` runs; "" means a login shell.
	DefaultAgent string
	// ForwardEnv is `forward_env` (trusted-only): host variable names passed into sessions.
	ForwardEnv []string
	// EnvFromHost is `env_from_host` (trusted-only): guest name → host variable name.
	EnvFromHost map[string]string
	// Env is `env`: literal guest variables.
	Env map[string]string
	// NoEnvPassthrough is `no_env_passthrough`: nothing ambient reaches the box.
	NoEnvPassthrough bool
	// Hide is `hide`: repository-relative paths hidden from the box.
	Hide []string
	// Sandbox is the repository's `[sandbox]` table, which narrows the manifest of
	// `git corral sandbox` (sandbox.go; NarrowSandbox).
	Sandbox Sandbox

	// Fields below were added with the loader (issue 3); each names its TOML key.

	// BoxDirs is `box_dirs`: repository-relative directories kept on the box's own disk instead
	// of the host mount (node_modules, target…).
	BoxDirs []string
	// IdleStop is `idle_stop`: stop the box after this long without a session; 0 never stops.
	IdleStop time.Duration
	// StopOnExit is `stop_on_exit`: stop the box when the last session ends.
	StopOnExit bool
	// Golden is `golden`: start new boxes from a shared, read-only golden base of their guest
	// recipe (image, packages, product guest scripts) instead of from scratch, resuming its saved
	// state. Default on.
	Golden bool
	// Snapshot is `snapshot`: take a disk snapshot before each session so it can be undone.
	Snapshot bool
	// SnapshotsKeep is `snapshots_keep`: how many automatic snapshots a box keeps.
	SnapshotsKeep int
	// GitIdentity is `git_identity`: host (the host's user.name/email), corral (a fixed
	// pseudonymous identity) or none; from loosest to strictest.
	GitIdentity string
	// AgentState is `agent_state`: shared (the host's agent state directory is mounted),
	// seeded (copied in once) or isolated (the box starts empty); from loosest to strictest.
	AgentState string
	// AgentLogin is `agent_login` (trusted-only): the host-held login the session's agent uses
	// in broker mode ("" the one named after the agent, if any; "none" none).
	AgentLogin string
	// APIBrokers is `api_brokers` (trusted-only): API brokers the box may use, by name.
	APIBrokers []string
	// APIRoutes is `[api_routes.NAME]` (trusted-only): API broker routes defined or changed by
	// the trusted layers, by name (apiroutes.go; Config.Route adds the built-in ones).
	APIRoutes map[string]APIRoute
	// EnvFile is `env_file` (trusted-only): a host dotenv file whose values go into sessions.
	EnvFile string
	// GitTokens is `git_tokens` (trusted-only): git host → host variable holding its token.
	GitTokens map[string]string
	// Mounts is `mounts` (trusted-only): extra host directories, "HOSTPATH:GUESTPATH[:ro]".
	Mounts []string
	// SSHAgent is `ssh_agent` (trusted-only): forward the host's SSH agent into sessions.
	SSHAgent bool
	// Ports is `ports` (trusted-only): forwarded ports, "HOSTPORT:GUESTPORT" (host side on
	// loopback).
	Ports []string
	// Name is `name` (trusted-only): the box name, instead of the one derived from the path.
	Name string
	// Timeout is `timeout` (trusted-only): the default limit of `run`; 0 means none.
	Timeout time.Duration

	// Fields below were added with clone boxes (issue 9); each names its TOML key.

	// CloneUncommitted is `clone_uncommitted` (trusted-only): with source = "clone", also send
	// the work tree's uncommitted changes to tracked files (never an untracked file).
	CloneUncommitted bool

	// Fields below were added with the agent store (issue 23); each names its TOML key.

	// AgentMinAge is `agent_min_age` (trusted-only): the age an agent package version must
	// reach on the registry before it is installed; 0 turns the window off.
	AgentMinAge time.Duration
	// AgentVersions is `agent_versions` (trusted-only): agent name → exact pinned version.
	AgentVersions map[string]string

	// Fields below were added with git routes (issue 34); each names its TOML key.

	// GitPush is `git_push`: the ref patterns a box in broker mode may push to through the
	// broker, as the trusted layers set them and the repository narrowed them (gitpush.go).
	GitPush RefPatterns
	// GitPushDelete is `git_push_delete` (trusted-only): pushes may delete allowed refs.
	GitPushDelete bool
	// GitPushForce is `git_push_force` (trusted-only): pushes may update allowed refs without
	// a proven fast-forward.
	GitPushForce bool
	// ForgeAPIAllow is `forge_api_allow` (trusted-only): the classes of forge API request
	// (merge, push, protection, write) a forge route lets through (apiroutes.go).
	ForgeAPIAllow []string

	// Fields below were added with secure defaults (issue 34); each names its TOML key.

	// EgressPresets is `egress_presets`: the named host sets the broker allows besides Egress,
	// as the trusted layers chose them and the repository narrowed them (presets.go). In broker
	// mode Load has already added their hosts to Egress.
	EgressPresets PresetChoice
	// NetworkDefaulted is not a key: it is true when no layer, flag or profile named a network
	// mode, so that Network is the built-in default. A box made in full mode before broker
	// became the default keeps full in that case (session.NetworkFor).
	NetworkDefaulted bool
}

// Default returns the built-in defaults, the lowest layer.
func Default() *Config {
	return &Config{
		Network: NetworkBroker, // full is an explicit choice (issue #34); old full boxes keep theirs (NetworkDefaulted)
		// Nothing named a mode in the defaults alone (Load recomputes it over the layers): a
		// command that loads no configuration (fetch) meets an old full box as a session does.
		NetworkDefaulted: true,
		Profile:          "standard",
		CPUs:             2,
		Memory:           "2GiB",
		Disk:             "10GiB",
		Source:           "mount",
		EnvFromHost:      map[string]string{},
		Env:              map[string]string{},
		GitIdentity:      "host",
		AgentState:       "isolated", // shared mounts ~/.claude writable: trusted layers choose it (issue #23)
		GitTokens:        map[string]string{},
		Golden:           true,
		SnapshotsKeep:    3,
		AgentMinAge:      7 * 24 * time.Hour,
		AgentVersions:    map[string]string{},
		EgressPresets:    PresetChoice{Trusted: slices.Clone(DefaultPresets)},
	}
}
