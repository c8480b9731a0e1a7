package broker

// Allow-list rules. Entries come only from trusted configuration layers. Each is one of
//   - an exact host name: "example.com" (normalised like a request: case, trailing dot, IDNA);
//   - a wildcard: "*.example.com" matches any name ending in ".example.com", at any depth, but
//     not "example.com" itself (list it too) and not "evil-example.com";
//   - an IP address or CIDR prefix: "10.1.2.3", "10.0.0.0/8", "fd00::1", "[fd00::/8]"; such an
//     entry allows a request naming that address literally, and lets an allowed name resolve
//     into it, which is the only way a private, loopback or link-local address is ever dialled;
// each optionally followed by ":PORT" (a bracketed IPv6 form then). Without a port an entry
// allows 80 and 443. A name entry never allows a literal IP request, and an address entry never
// allows a name by itself.

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// defaultPorts are the ports an entry without ":PORT" allows.
var defaultPorts = []uint16{80, 443}

// Rule is one parsed allow-list entry.
type Rule struct {
	// Text is the entry in normalised form, as logged with each decision it made.
	Text string
	// Host is an exact host name; empty for wildcard and address rules.
	Host string
	// Suffix is ".example.com" for the wildcard "*.example.com".
	Suffix string
	// Prefix is the address or CIDR of an address rule (a single address is a /32 or /128).
	Prefix netip.Prefix
	// Ports are the allowed ports; nil means 80 and 443.
	Ports []uint16
}

// AllowList is a parsed allow-list. The zero value allows nothing.
type AllowList struct {
	rules []Rule
}

// ParseAllowList parses every entry and reports every bad one, each naming its index and value.
func ParseAllowList(entries []string) (*AllowList, error) {
	l := &AllowList{}
	var errs []error
	for i, e := range entries {
		r, err := parseRule(strings.TrimSpace(e))
		if err != nil {
			errs = append(errs, fmt.Errorf("allow-list entry %d %q: %w", i+1, e, err))
			continue
		}
		l.rules = append(l.rules, r)
	}
	return l, errors.Join(errs...)
}

// Rules returns the parsed rules in order.
func (l *AllowList) Rules() []Rule { return append([]Rule(nil), l.rules...) }

func parseRule(s string) (Rule, error) {
	if s == "" {
		return Rule{}, errors.New("empty entry")
	}
	hostPart, port, err := splitEntryPort(s)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{}
	if port != 0 {
		r.Ports = []uint16{port}
	}
	switch {
	case strings.Contains(hostPart, "/"):
		p, err := netip.ParsePrefix(hostPart)
		if err != nil || p.Addr().Zone() != "" || p.Addr().Is4In6() {
			return Rule{}, fmt.Errorf("not a CIDR prefix %q", hostPart)
		}
		r.Prefix = p.Masked()
	case strings.HasPrefix(hostPart, "*."):
		name, addr, err := NormalizeHost(hostPart[2:])
		if err != nil || addr.IsValid() {
			return Rule{}, fmt.Errorf("wildcard needs a host name after '*.': %v", err)
		}
		r.Suffix = "." + name
	default:
		if a, err := netip.ParseAddr(hostPart); err == nil && a.Is6() && a.Zone() == "" && !a.Is4In6() {
			r.Prefix = netip.PrefixFrom(a, 128)
			break
		}
		name, addr, err := NormalizeHost(hostPart)
		if err != nil {
			return Rule{}, err
		}
		if addr.IsValid() {
			r.Prefix = netip.PrefixFrom(addr, 32)
		} else {
			r.Host = name
		}
	}
	r.Text = r.format()
	return r, nil
}

// splitEntryPort separates an optional ":PORT" from an entry. A bare IPv6 address or prefix
// (more than one colon, no brackets) has no port.
func splitEntryPort(s string) (string, uint16, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, errors.New("unclosed '['")
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, 0, nil
		}
		if rest[0] != ':' {
			return "", 0, errors.New("text after ']'")
		}
		p, err := ParsePort(rest[1:])
		return host, p, err
	}
	if strings.Count(s, ":") != 1 {
		return s, 0, nil
	}
	i := strings.IndexByte(s, ':')
	p, err := ParsePort(s[i+1:])
	return s[:i], p, err
}

// format renders the rule in normalised entry syntax.
func (r Rule) format() string {
	var host string
	switch {
	case r.Host != "":
		host = r.Host
	case r.Suffix != "":
		host = "*" + r.Suffix
	case r.Prefix.IsSingleIP():
		host = r.Prefix.Addr().String()
	default:
		host = r.Prefix.String()
	}
	if r.Ports == nil {
		return host
	}
	if r.Prefix.IsValid() && r.Prefix.Addr().Is6() {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("%s:%d", host, r.Ports[0])
}

func (r Rule) allowsPort(port uint16) bool {
	ports := r.Ports
	if ports == nil {
		ports = defaultPorts
	}
	for _, p := range ports {
		if p == port {
			return true
		}
	}
	return false
}

// MatchName returns the first name rule (exact or wildcard) allowing host:port.
func (l *AllowList) MatchName(host string, port uint16) (Rule, bool) {
	for _, r := range l.rules {
		if !r.allowsPort(port) {
			continue
		}
		if r.Host != "" && r.Host == host ||
			r.Suffix != "" && len(host) > len(r.Suffix) && strings.HasSuffix(host, r.Suffix) {
			return r, true
		}
	}
	return Rule{}, false
}

// MatchAddr returns the first address rule allowing addr:port.
func (l *AllowList) MatchAddr(addr netip.Addr, port uint16) (Rule, bool) {
	for _, r := range l.rules {
		if r.Prefix.IsValid() && r.allowsPort(port) && r.Prefix.Contains(addr) {
			return r, true
		}
	}
	return Rule{}, false
}
