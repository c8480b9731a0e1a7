package policy

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
	// Profile is `profile`, a floor of guarantees (see profiles.go once it lands).
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
	// ProtectGitMetadata is `protect_git_metadata`: shadow and verify git metadata.
	ProtectGitMetadata bool
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
}

// Default returns the built-in defaults, the lowest layer.
func Default() *Config {
	return &Config{
		Network:            NetworkFull,
		Profile:            "standard",
		CPUs:               2,
		Memory:             "2GiB",
		Disk:               "10GiB",
		ProtectGitMetadata: true,
		Source:             "mount",
		EnvFromHost:        map[string]string{},
		Env:                map[string]string{},
	}
}
