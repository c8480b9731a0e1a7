package provision

// This file flags what a provision script does that review should point at: code fetched from
// the network and run, packages straight from registries, new package sources, sudo. Flags do
// not block approval; they make sure the reader sees the line.

import (
	"fmt"
	"regexp"
	"strings"
)

type flagRule struct {
	re   *regexp.Regexp
	text string
	// root rules are reported besides a network rule on the same line; of the network rules
	// only the first (most specific) that matches a line is reported.
	root bool
}

var flagRules = []flagRule{
	{regexp.MustCompile(`\b(curl|wget|fetch)\b[^|]*\|\s*(sudo\s+(-\S+\s+)*)?(env\s+)?(/\S*/)?(ba|z|da|k|fi|c|tc)?sh\b`), "pipes a download into a shell (remote code)", false},
	{regexp.MustCompile(`\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(/\S*/)?(python[0-9.]*|perl|ruby|node|php|bun|deno)\b`), "pipes a download into an interpreter (remote code)", false},
	{regexp.MustCompile(`(\$\(|<\(|` + "`" + `)\s*(curl|wget)\b`), "runs or evaluates a download (remote code)", false},
	{regexp.MustCompile(`\bpip[0-9.]*\s+install\b.*(git\+|https?://|\.whl\b|\.tar\.gz\b|\.zip\b)`), "installs Python code from a URL (remote code)", false},
	{regexp.MustCompile(`\b(npx|pnpx|bunx|uvx)\b|\b(pnpm|yarn)\s+dlx\b|\bpipx\s+run\b`), "runs a package straight from a registry (remote code)", false},
	{regexp.MustCompile(`\b(npm|pnpm|yarn)\s+(install|i|add)\b.*(git\+|https?://|github:)`), "installs JavaScript code from a URL (remote code)", false},
	{regexp.MustCompile(`\bgo\s+(install|run)\b.*@`), "installs or runs a Go module from the network (remote code)", false},
	{regexp.MustCompile(`\bcargo\s+install\b.*--git\b`), "installs Rust code from a git URL (remote code)", false},
	{regexp.MustCompile(`\bgit\s+clone\b`), "clones code from elsewhere", false},
	{regexp.MustCompile(`\b(add-apt-repository|apt-key)\b|sources\.list`), "adds a package source", false},
	{regexp.MustCompile(`\b(curl|wget)\b`), "downloads from the network", false},
	{regexp.MustCompile(`\bsudo\b|\bpkexec\b|\bsu\s+-`), "asks for root (refused in broker and offline modes)", true},
}

// scriptFlags returns one flag per matching line and rule: "line N: what".
func scriptFlags(body []byte) []string {
	var out []string
	for i, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		network := false
		for _, r := range flagRules {
			if (!r.root && network) || !r.re.MatchString(line) {
				continue
			}
			network = network || !r.root
			out = append(out, fmt.Sprintf("line %d: %s", i+1, r.text))
		}
	}
	return out
}
