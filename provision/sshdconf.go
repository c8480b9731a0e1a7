package provision

// This file renders the guest's sshd configuration (/etc/ssh/sshd_config.d/50-corral.conf).
// Rules:
//   - Connections from the guest's loopback (127.0.0.1, ::1) are an editor's: git corral
//     ssh-proxy reaches the guest's sshd through a direct-tcpip channel of git corral's own
//     connection, so sshd sees them come from 127.0.0.1. They may open TCP forwards (ssh -L)
//     only to a guest port a `ports` entry names, at 127.0.0.1, localhost or [::1]; no `ports`
//     means no TCP forwarding at all. Remote forwards (ssh -R), unix-socket forwards, X11 and
//     tun devices are refused; agent forwarding only with ssh_agent.
//   - git corral's own connections arrive from the network's gateway and are not restricted:
//     the guard check's channel to GuardSocketPath is a unix-socket forward, and OpenSSH's
//     PermitOpen cannot name a socket path.
//   - Every value is a number checked here or a fixed word: nothing from a configuration file
//     reaches the file as text.

import (
	"fmt"
	"strconv"
	"strings"
)

type sshdData struct {
	TCP, PermitOpen, Agent string
}

// SSHDConf renders the guest sshd configuration for opts (ForwardPorts, SSHAgent).
func SSHDConf(opts Options) (string, error) {
	d := sshdData{TCP: "no", PermitOpen: "none", Agent: "no"}
	if opts.SSHAgent {
		d.Agent = "yes"
	}
	var open []string
	seen := map[int]bool{}
	for _, p := range opts.ForwardPorts {
		if p < 1 || p > 65535 {
			return "", fmt.Errorf("render the guest sshd configuration: forwarded guest port %d is not from 1 to 65535", p)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		n := strconv.Itoa(p)
		open = append(open, "127.0.0.1:"+n, "localhost:"+n, "[::1]:"+n)
	}
	if len(open) > 0 {
		d.TCP, d.PermitOpen = "local", strings.Join(open, " ")
	}
	text, err := execGuest("sshd.conf", d)
	if err != nil {
		return "", fmt.Errorf("render the guest sshd configuration: %w", err)
	}
	return text, nil
}
