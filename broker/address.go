package broker

// Address rules. A destination address may be dialled only when it is global unicast, or when a
// trusted allow-list entry names it (or a prefix holding it) explicitly. Not global unicast here
// means every special-purpose block of the IANA registries, plus the forms that smuggle one
// address inside another:
//   - IPv4: this-network, private, loopback, CGNAT, link-local (and so the 169.254.169.254 metadata
//     service), IETF protocol assignments, documentation and benchmarking ranges, 6to4 relay
//     anycast, multicast, reserved and broadcast; the Lima user-mode gateway 192.168.5.2 falls in
//     the private block.
//   - IPv6: anything outside 2000::/3 (so loopback, unspecified, IPv4-mapped and -compatible,
//     NAT64 64:ff9b::/96 and /48, discard, ULA, link-local, site-local, multicast), and inside it
//     the IETF block holding Teredo 2001::/32, documentation 2001:db8::/32 and 3fff::/20, and 6to4
//     2002::/16, whose embedded IPv4 address could be anything.
// An IPv4-mapped IPv6 address never matches an IPv4 allow-list entry: it is always refused.

import "net/netip"

var forbidden4 = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
	"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
)

var (
	global6    = netip.MustParsePrefix("2000::/3")
	forbidden6 = mustPrefixes("2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// IsPublic reports whether addr is a global unicast address that may be dialled without an
// explicit allow-list entry.
func IsPublic(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" {
		return false
	}
	list := forbidden4
	if addr.Is6() {
		if addr.Is4In6() || !global6.Contains(addr) {
			return false
		}
		list = forbidden6
	}
	for _, p := range list {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}
