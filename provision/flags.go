package provision

// This file flags what a provision script does that review should point at: code fetched from
// the network and run, packages installed or run straight from registries (npm -g, npx, pip,
// pipx, uvx, gem, go install, cargo install and their friends: each runs code nobody reviewed),
// new package sources, sudo, and a "#!" line that has env -S run a command line of its own.
// Flags do not block approval; they make sure the reader sees the line.

import (
	"fmt"
	"path"
	"strings"

	"github.com/git-corral/git-corral/internal/lazyre"
)

type flagRule struct {
	re   *lazyre.Regexp
	text string
	// root rules are reported besides a network rule on the same line; of the network rules
	// only the first (most specific) that matches a line is reported.
	root bool
}

var flagRules = []flagRule{
	{lazyre.New(`\b(curl|wget|fetch)\b[^|]*\|\s*(sudo\s+(-\S+\s+)*)?(env\s+)?(/\S*/)?(ba|z|da|k|fi|c|tc)?sh\b`), "pipes a download into a shell (remote code)", false},
	{lazyre.New(`\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(/\S*/)?(python[0-9.]*|perl|ruby|node|php|bun|deno)\b`), "pipes a download into an interpreter (remote code)", false},
	{lazyre.New(`(\$\(|<\(|` + "`" + `)\s*(curl|wget)\b`), "runs or evaluates a download (remote code)", false},
	{lazyre.New(`\bpip[0-9.]*\s+install\b.*(git\+|https?://|\.whl\b|\.tar\.gz\b|\.zip\b)`), "installs Python code from a URL (remote code)", false},
	{lazyre.New(`\b(npx|pnpx|bunx|uvx)\b|\b(pnpm|yarn|bun)\s+dlx\b|\b(pipx|uv\s+tool)\s+run\b|\bnpm\s+(exec|x)\b|\bdeno\s+run\b.*\b(https?|npm|jsr):`), "runs a package straight from a registry (remote code)", false},
	{lazyre.New(`\b(npm|pnpm|yarn|bun)\s+(install|i|add)\b.*(git\+|https?://|github:)`), "installs JavaScript code from a URL (remote code)", false},
	{lazyre.New(`\bgo\s+(install|run)\b.*@`), "installs or runs a Go module from the network (remote code)", false},
	{lazyre.New(`\bcargo\s+install\b.*--git\b`), "installs Rust code from a git URL (remote code)", false},
	{registryInstallRE, "installs a package from a registry, with whatever code it runs (remote code)", false},
	{lazyre.New(`\bgit\s+clone\b`), "clones code from elsewhere", false},
	{lazyre.New(`\b(add-apt-repository|apt-key)\b|sources\.list`), "adds a package source", false},
	{lazyre.New(`\b(curl|wget)\b`), "downloads from the network", false},
	{lazyre.New(`\bsudo\b|\bpkexec\b|\bsu\s+-`), "asks for root (refused in broker and offline modes)", true},
}

// registryInstallRE matches installs from language registries: npm/pnpm/bun global installs,
// yarn global, pip (also "python -m pip", "uv pip"), pipx, uv tool, gem, go install or get of
// a non-local package, cargo install of anything but a local path, and their friends.
var registryInstallRE = lazyre.New(`\b(npm|pnpm|bun)\s+(install|i|add)\b.*\s(-g|--global)\b` +
	`|\b(npm|pnpm|bun)\s+(install|i|add)\s+(-g|--global)\b|\byarn\s+global\s+add\b` +
	`|\bpip[0-9.]*\s+install\b|\b(pipx|uv\s+tool)\s+install\b|\buv\s+pip\s+install\b` +
	`|\bgem\s+install\b|\bgo\s+(install|get)\s+(-\S+\s+)*[^.\s-]|\bcargo\s+install\b(\s+-\S+)*\s+[^.\s-]` +
	`|\bcargo\s+binstall\b|\bdeno\s+install\b|\bcomposer\s+global\s+require\b|\bcpanm?\b\s+\S` +
	`|\bluarocks\s+install\b|\bdotnet\s+tool\s+install\b|\bbrew\s+install\b|\bconda\s+install\b`)

// shebangFlag flags a "#!" line that has env -S split the rest into a command line: whatever
// that command line runs is code of the first line, easy to miss as a comment.
func shebangFlag(body []byte) []string {
	first, _, _ := strings.Cut(string(body), "\n")
	rest, ok := strings.CutPrefix(first, "#!")
	f := strings.Fields(rest)
	if !ok || len(f) < 2 || path.Base(f[0]) != "env" || !envSplit(f[1]) {
		return nil
	}
	cmd := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), f[0]))
	out := []string{fmt.Sprintf("line 1: the #! line runs env -S, which runs a command line of its own: %s", cmd)}
	for _, fl := range lineFlags(cmd) {
		out = append(out, "line 1: "+fl)
	}
	return out
}

// scriptFlags returns one flag per matching line and rule: "line N: what".
func scriptFlags(body []byte) []string {
	out := shebangFlag(body)
	for i, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, fl := range lineFlags(line) {
			out = append(out, fmt.Sprintf("line %d: %s", i+1, fl))
		}
	}
	return out
}

// lineFlags returns what the rules say of one line.
func lineFlags(line string) []string {
	var out []string
	network := false
	for _, r := range flagRules {
		if (!r.root && network) || !r.re.MatchString(line) {
			continue
		}
		network = network || !r.root
		out = append(out, r.text)
	}
	return out
}
