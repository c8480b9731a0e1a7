package provision

// This file renders the broker and offline lockdowns as nftables rulesets. Rules:
//   - One inet table (IPv4 and IPv6 alike); every base chain has policy drop, so anything not
//     named below is refused: TCP, UDP, ICMP, DNS, IPv6, the host's loopback services behind
//     the gateway.
//   - Loopback inside the guest stays open: Lima's guest agent and its SSH port forwards reach
//     guest services over lo, and the host reaches the guest agent through the SSH session
//     (Lima forwards the agent's Unix socket), which the rules below let in.
//   - Inbound: the host's SSH session arrives from the slirp gateway on tcp/22; replies travel
//     as established traffic. DHCP replies from slirp are let in so the lease can be renewed.
//   - Outbound: DHCP requests to slirp's built-in server (port 67, answered inside QEMU and never
//     forwarded to the host) and, in broker mode only, tcp to the broker's port on the gateway.
//   - The broker's port is this box's own (start picks one per box), so it is not in the ruleset:
//     the ruleset includes BrokerPortFile, which 05-box writes at every boot. The ruleset, the
//     guard check that pins its digest and 20-lockdown are then byte for byte the same in every
//     box of a guest recipe, and a box resumed from a golden state runs only 05-box again (which
//     loads the ruleset again with its port) instead of the base files and the lockdown.
//   - The ruleset starts with "flush ruleset": whatever else was loaded (Lima's DNS NAT rules,
//     Debian's nftables.conf) is gone, so the live ruleset can be compared for equality.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/git-corral/git-corral/policy"
)

const (
	// Gateway is Lima's slirp host gateway: the host's loopback services appear here.
	Gateway = "192.168.5.2"
	// SlirpDNS is the address Lima's host resolver answers on when it is enabled.
	SlirpDNS = "192.168.5.3"
	// TableName is the one nftables table a lockdown installs.
	TableName = "corral"
)

// BrokerPortFile is the root-owned nftables file that names this box's broker port (05-box
// writes it, BrokerPortDefine's text); the broker-mode ruleset includes it.
const BrokerPortFile = "/etc/corral/broker-port.nft"

// Ruleset returns the nftables ruleset of a lockdown mode; "" for full, which has none.
func Ruleset(mode policy.Network) (string, error) {
	switch mode {
	case policy.NetworkFull:
		return "", nil
	case policy.NetworkOffline:
		return rulesetText(mode, "", ""), nil
	case policy.NetworkBroker:
		return rulesetText(mode, "include \""+BrokerPortFile+"\"\n",
			fmt.Sprintf("\t\tip daddr %s tcp dport $broker_port ct state new accept\n", Gateway)), nil
	}
	return "", fmt.Errorf("%w: network mode %q: want full, broker or offline", ErrUnsafeValue, mode)
}

// BrokerPortDefine is BrokerPortFile's text for a broker port.
func BrokerPortDefine(port int) (string, error) {
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("%w: broker port %d: want 1-65535", ErrUnsafeValue, port)
	}
	return fmt.Sprintf("define broker_port = %d\n", port), nil
}

func rulesetText(mode policy.Network, include, extraOut string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/usr/sbin/nft -f\n# git corral %s lockdown. Root-owned; loaded before the network comes up.\n", mode)
	b.WriteString("flush ruleset\n")
	b.WriteString(include)
	b.WriteString("\ntable inet " + TableName + " {\n")
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n")
	b.WriteString("\t\tiifname \"lo\" accept\n")
	b.WriteString("\t\tct state established,related accept\n")
	fmt.Fprintf(&b, "\t\tip saddr %s tcp dport 22 ct state new accept\n", Gateway)
	b.WriteString("\t\tudp sport 67 udp dport 68 accept\n")
	b.WriteString("\t}\n\n")
	b.WriteString("\tchain forward {\n\t\ttype filter hook forward priority filter; policy drop;\n\t}\n\n")
	b.WriteString("\tchain output {\n\t\ttype filter hook output priority filter; policy drop;\n")
	b.WriteString("\t\toifname \"lo\" accept\n")
	b.WriteString("\t\tct state established,related accept\n")
	// The host's SSH connections that were open when this ruleset was loaded (Lima's readiness
	// checks, at the first boot) are unknown to conntrack: when the guest's side speaks first,
	// conntrack takes its packet for a new outgoing connection, and without this rule the
	// connection stalls until the host happens to send (minutes, seen at 1 of 2 first boots).
	// Only sshd can send from port 22 (binding it needs root), and never a SYN.
	fmt.Fprintf(&b, "\t\tip daddr %s tcp sport 22 tcp flags & syn == 0 accept\n", Gateway)
	fmt.Fprintf(&b, "\t\tip daddr { %s, 255.255.255.255 } udp sport 68 udp dport 67 accept\n", Gateway)
	b.WriteString(extraOut)
	b.WriteString("\t}\n}\n")
	return b.String()
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// SHA256Hex is the hex SHA-256 of s, as manifests and the guard check name files.
func SHA256Hex(s string) string { return sha256Hex(s) }
