package gitshadow

import (
	"fmt"
	"strings"
)

// GuardPath is where the guest keeps gitshadow's own guard check, which provision's guard
// check runs before every session.
const GuardPath = "/usr/local/libexec/corral/gitshadow-guard"

// BootScript is the shadow's guest script (GuestScript) followed by what the guest guard check
// relies on: /run/corral/shadow.expect (one mount per line, "ro PATH" or "rw PATH", root-owned) and gitshadow's guard
// check installed root-owned at GuardPath. Every path is quoted by ShellQuote,
// which refuses newlines, so each line of the expectations file is one path.
func (plan *Plan) BootScript() (string, error) {
	all := plan.AllShadows() // sorted and quoted once for the three parts
	quoted := make(map[string]string, len(all))
	quote := func(s string) (string, error) {
		if q, ok := quoted[s]; ok {
			return q, nil
		}
		q, err := ShellQuote(s)
		if err == nil {
			quoted[s] = q
		}
		return q, err
	}
	script, err := plan.guestScript(all, quote)
	if err != nil {
		return "", err
	}
	exps := expectations(all)
	guard, err := guardChecks(exps, quote)
	if err != nil {
		return "", err
	}
	if strings.Contains(guard, "\nCORRAL_SHADOW_GUARD_EOF\n") {
		return "", fmt.Errorf("git shadow guard holds its own heredoc delimiter")
	}
	var b strings.Builder
	b.Grow(len(script) + len(guard) + len(exps)*96)
	b.WriteString(strings.TrimRight(script, "\n"))
	b.WriteString("\n\n# git corral: what the guest guard check verifies before every session.\n")
	b.WriteString("mkdir -p /run/corral /usr/local/libexec/corral\n")
	b.WriteString("umask 022\n{\n\t:\n")
	for _, e := range exps {
		q, err := quote(e.Path)
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
	b.WriteString("cat >" + GuardPath + ".tmp <<'CORRAL_SHADOW_GUARD_EOF'\n")
	b.WriteString(strings.TrimRight(guard, "\n"))
	b.WriteString("\nCORRAL_SHADOW_GUARD_EOF\n")
	b.WriteString("chown root:root " + GuardPath + ".tmp && chmod 755 " + GuardPath + ".tmp && mv -f " + GuardPath + ".tmp " + GuardPath + "\n")
	return b.String(), nil
}
