package main

import (
	"fmt"
	"strings"

	"github.com/git-corral/git-corral/gitshadow"
)

// shadowGuardPath is where the guest keeps gitshadow's own guard check, which provision's guard
// check runs before every session.
const shadowGuardPath = "/usr/local/libexec/corral/gitshadow-guard"

// shadowScriptWithExpectations appends to the shadow script what the guest guard check relies
// on: /run/corral/shadow.expect (one mount per line, "ro PATH" or "rw PATH", root-owned) and gitshadow's guard
// check installed root-owned at shadowGuardPath. Every path is quoted by gitshadow.ShellQuote,
// which refuses newlines, so each line of the expectations file is one path.
func shadowScriptWithExpectations(plan *gitshadow.Plan, script string) (string, error) {
	guard, err := plan.GuardChecks()
	if err != nil {
		return "", err
	}
	if strings.Contains(guard, "\nCORRAL_SHADOW_GUARD_EOF\n") {
		return "", fmt.Errorf("git shadow guard holds its own heredoc delimiter")
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(script, "\n"))
	b.WriteString("\n\n# git corral: what the guest guard check verifies before every session.\n")
	b.WriteString("mkdir -p /run/corral /usr/local/libexec/corral\n")
	b.WriteString("umask 022\n{\n\t:\n")
	for _, e := range plan.Expectations() {
		q, err := gitshadow.ShellQuote(e.Path)
		if err != nil {
			return "", err
		}
		mode := "rw"
		if e.ReadOnly {
			mode = "ro"
		}
		fmt.Fprintf(&b, "\tprintf '%%s %%s\\n' %s %s\n", mode, q)
	}
	b.WriteString("} >/run/corral/shadow.expect.tmp\n")
	b.WriteString("mv -f /run/corral/shadow.expect.tmp /run/corral/shadow.expect\n")
	b.WriteString("cat >" + shadowGuardPath + ".tmp <<'CORRAL_SHADOW_GUARD_EOF'\n")
	b.WriteString(strings.TrimRight(guard, "\n"))
	b.WriteString("\nCORRAL_SHADOW_GUARD_EOF\n")
	b.WriteString("chown root:root " + shadowGuardPath + ".tmp && chmod 755 " + shadowGuardPath + ".tmp && mv -f " + shadowGuardPath + ".tmp " + shadowGuardPath + "\n")
	return b.String(), nil
}
