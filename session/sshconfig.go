package session

import (
	"fmt"
	"strings"

	"github.com/git-corral/git-corral/internal/lazyre"
	"github.com/git-corral/git-corral/internal/shellquote"
	"github.com/git-corral/git-corral/vm"
)

// boxNameRE is what a box name is (project.BoxName): nothing ssh_config or a shell reads as syntax.
var boxNameRE = lazyre.New(`^[a-z0-9][a-z0-9-]{0,62}$`)

// SSHHost is one box's entry in the ssh_config(5) text git corral ssh-config writes.
type SSHHost struct {
	Box string
	// Endpoint is the guest sshd's user and key (from Lima's ssh.config); its host and port are
	// not written: the connection goes through ProxyCommand.
	Endpoint vm.Endpoint
	// Exe is the git-corral binary the ProxyCommand runs.
	Exe string
	// KnownHosts pins the guest's host key for this entry.
	KnownHosts string
}

// SSHConfigText renders hosts as ssh_config(5) text, one "Host corral-BOX" entry each, whose
// connection runs "git corral --box BOX ssh-proxy" (Relay: guard check and audit first). Every
// value is checked for line breaks (a line break would add a directive of the box's choosing)
// and quoted: the ProxyCommand for the shell ssh runs it with, the rest for ssh_config's own
// quoting.
func SSHConfigText(hosts []SSHHost) (string, error) {
	var b strings.Builder
	b.WriteString("# git corral ssh-config: one entry per box. Each connection runs git corral's guard check\n")
	b.WriteString("# and writes an audit record before it reaches the box (git help corral, ssh-config).\n")
	for _, h := range hosts {
		exe, err := shellquote.Line(h.Exe)
		if err != nil {
			return "", fmt.Errorf("ssh-config: git-corral path: %w", err)
		}
		if !boxNameRE.MatchString(h.Box) {
			return "", fmt.Errorf("ssh-config: %q is not a box name", h.Box)
		}
		box := h.Box
		vals := map[string]string{"User": h.Endpoint.User, "IdentityFile": h.Endpoint.IdentityFile, "UserKnownHostsFile": h.KnownHosts}
		for k, v := range vals {
			if v == "" || strings.ContainsAny(v, "\"\x00\r\n") {
				return "", fmt.Errorf("ssh-config: box %s: %s %q is empty or holds a quote or line break", h.Box, k, v)
			}
		}
		fmt.Fprintf(&b, "\nHost corral-%s\n", h.Box)
		fmt.Fprintf(&b, "  HostName 127.0.0.1\n  HostKeyAlias corral-%s\n", h.Box)
		fmt.Fprintf(&b, "  User \"%s\"\n  IdentityFile \"%s\"\n  IdentitiesOnly yes\n", vals["User"], vals["IdentityFile"])
		fmt.Fprintf(&b, "  UserKnownHostsFile \"%s\"\n  StrictHostKeyChecking accept-new\n", vals["UserKnownHostsFile"])
		b.WriteString("  ForwardAgent no\n  ControlMaster no\n  ControlPath none\n")
		// ssh runs ProxyCommand with "exec $SHELL -c", after expanding %-tokens: a literal % in
		// a path is written %%.
		fmt.Fprintf(&b, "  ProxyCommand %s --box %s ssh-proxy\n", strings.ReplaceAll(exe, "%", "%%"), box)
	}
	return b.String(), nil
}
