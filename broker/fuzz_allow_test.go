package broker

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// FuzzAllowList checks the allow-list and the decision against rules written out independently
// of the matcher. Inputs: allow-list entries (one a line), a destination as the box spells it,
// and what the resolver answers for it (addresses separated by commas). Properties:
//   - every parsed rule is in normal form: exactly one of name, wildcard or prefix; names are
//     what NormalizeHost makes of them; prefixes are masked, zone-free and not IPv4-mapped; and
//     parsing its Text again gives the same rule (normalisation is idempotent);
//   - a literal address is allowed exactly when an address rule holds it and allows the port,
//     and a name exactly when a name rule matches it label by label and allows the port and each
//     address it resolves to is public or held by an address rule: nothing the rules do not
//     allow is allowed, and nothing they allow is refused;
//   - an allowed destination dials exactly the addresses that were checked, and none of them is
//     loopback, private, link-local, CGNAT, multicast, unspecified, zoned, IPv4-mapped, NAT64,
//     6to4 or Teredo unless an address rule names it.
func FuzzAllowList(f *testing.F) {
	f.Add("example.com\n*.example.com:8443\n10.9.0.0/16:8080", "api.example.com:8443", "93.184.216.34")
	f.Fuzz(func(t *testing.T, entries, dest, answers string) {
		l, _ := ParseAllowList(strings.Split(entries, "\n")) // bad entries are left out
		for _, r := range l.Rules() {
			checkRuleForm(t, r)
		}
		a, err := ParseAuthority(dest, 443)
		if err != nil {
			return
		}
		res := fakeResolver{}
		if a.Host != "" {
			res[a.Host] = parseAnswers(answers)
		}
		b := &Broker{allow: l, resolver: res, lim: Limits{}.withDefaults()}
		v, ref := b.decide(context.Background(), a)
		want, wantAddrs := specAllows(l.Rules(), a, res[a.Host])
		if (ref == nil) != want {
			t.Fatalf("entries %q, destination %q (%v), answers %v: allowed=%v, want %v", entries, dest, a, res[a.Host], ref == nil, want)
		}
		if ref != nil {
			return
		}
		if !slices.Equal(v.addrs, wantAddrs) {
			t.Fatalf("destination %q: dials %v, checked %v", dest, v.addrs, wantAddrs)
		}
		for _, addr := range v.addrs {
			if specForbidden(addr) && !specAddrRule(l.Rules(), addr, a.Port) {
				t.Fatalf("destination %q: dials forbidden %v with no address rule naming it", dest, addr)
			}
		}
	})
}

// checkRuleForm fails unless r is in normal form and its Text parses back to r.
func checkRuleForm(t *testing.T, r Rule) {
	t.Helper()
	kinds := 0
	for _, set := range []bool{r.Host != "", r.Suffix != "", r.Prefix.IsValid()} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		t.Fatalf("rule %+v is not exactly one of name, wildcard, prefix", r)
	}
	if r.Host != "" {
		if n, addr, err := NormalizeHost(r.Host); err != nil || n != r.Host || addr.IsValid() {
			t.Fatalf("rule name %q not normal: %q %v %v", r.Host, n, addr, err)
		}
	}
	if r.Suffix != "" {
		if n, _, err := NormalizeHost(strings.TrimPrefix(r.Suffix, ".")); err != nil || "."+n != r.Suffix {
			t.Fatalf("rule wildcard %q not normal: %q %v", r.Suffix, n, err)
		}
	}
	if r.Prefix.IsValid() && (r.Prefix != r.Prefix.Masked() || r.Prefix.Addr().Zone() != "" || r.Prefix.Addr().Is4In6()) {
		t.Fatalf("rule prefix %v not normal", r.Prefix)
	}
	again, err := ParseAllowList([]string{r.Text})
	if err != nil || len(again.Rules()) != 1 {
		t.Fatalf("rule text %q does not parse again: %v", r.Text, err)
	}
	g := again.Rules()[0]
	if g.Text != r.Text || g.Host != r.Host || g.Suffix != r.Suffix || g.Prefix != r.Prefix || !slices.Equal(g.Ports, r.Ports) {
		t.Fatalf("rule text %q parses to %+v, not %+v", r.Text, g, r)
	}
}

// parseAnswers reads a resolver answer: addresses separated by commas; anything else is dropped.
func parseAnswers(s string) []netip.Addr {
	var out []netip.Addr
	for _, f := range strings.Split(s, ",") {
		if a, err := netip.ParseAddr(strings.TrimSpace(f)); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// specAllows is the decision written from the allow-list's documented rules, and the addresses
// an allowed destination must dial.
func specAllows(rules []Rule, a Authority, answers []netip.Addr) (bool, []netip.Addr) {
	if a.Addr.IsValid() {
		return specAddrRule(rules, a.Addr, a.Port), []netip.Addr{a.Addr}
	}
	if !specNameRule(rules, a.Host, a.Port) || len(answers) == 0 {
		return false, nil
	}
	for _, addr := range answers {
		if !specAddrRule(rules, addr, a.Port) && !IsPublic(addr) {
			return false, nil
		}
	}
	return true, answers
}

// specPort: no port in the entry means 80 and 443.
func specPort(r Rule, port uint16) bool {
	if r.Ports == nil {
		return port == 80 || port == 443
	}
	return slices.Contains(r.Ports, port)
}

// specNameRule: an exact name equals host; a wildcard's labels are the last labels of host,
// which has at least one more.
func specNameRule(rules []Rule, host string, port uint16) bool {
	labels := strings.Split(host, ".")
	for _, r := range rules {
		if !specPort(r, port) {
			continue
		}
		if r.Host != "" && r.Host == host {
			return true
		}
		if r.Suffix != "" {
			want := strings.Split(r.Suffix[1:], ".")
			if len(labels) > len(want) && slices.Equal(labels[len(labels)-len(want):], want) {
				return true
			}
		}
	}
	return false
}

// specAddrRule: an address rule's prefix holds addr and the rule allows the port.
func specAddrRule(rules []Rule, addr netip.Addr, port uint16) bool {
	for _, r := range rules {
		if r.Prefix.IsValid() && r.Prefix.Contains(addr) && specPort(r, port) {
			return true
		}
	}
	return false
}

// specSmuggling are IPv6 blocks that carry another address (NAT64, 6to4, Teredo).
var specSmuggling = mustPrefixes("64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32", "100.64.0.0/10")

// specForbidden is written with net/netip's own predicates, not with IsPublic's table.
func specForbidden(a netip.Addr) bool {
	if a.Zone() != "" || a.Is4In6() || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range specSmuggling {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
