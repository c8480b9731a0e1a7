package broker

// Authority rules. Every destination the box names, and every allow-list entry, passes through
// ParseAuthority, so that the spelling the box chose cannot change what is decided:
//   - host names are lower-cased, lose one trailing dot, and are converted to their ASCII (IDNA)
//     form; each label is 1-63 letters, digits, '-' or '_', the name at most 253 bytes;
//   - IP literals are accepted only in their canonical forms: dotted-quad IPv4 without leading
//     zeros, and bracketed IPv6 without a zone; any other numeric spelling (2130706433, 0x7f.1,
//     127.1, 0177.0.0.1) is refused rather than guessed at, because resolvers disagree on them;
//   - ports are 1-65535 written in decimal without leading zeros (":0443" is refused);
//   - anything else (userinfo, percent signs, spaces, empty labels) is malformed.

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrMalformed is wrapped by every authority parse error; requests carrying one get 400.
var ErrMalformed = errors.New("malformed authority")

// Authority is a normalised destination: a host name or an IP address, and a port.
type Authority struct {
	// Host is the lower-case ASCII host name; empty when Addr is set.
	Host string
	// Addr is the IP literal the request named; invalid when Host is set.
	Addr netip.Addr
	// Port is 1-65535.
	Port uint16
}

// String is the authority as host:port, with IPv6 literals bracketed.
func (a Authority) String() string {
	if a.Addr.IsValid() {
		return netip.AddrPortFrom(a.Addr, a.Port).String()
	}
	return fmt.Sprintf("%s:%d", a.Host, a.Port)
}

// Name is the host name or the IP literal, without the port.
func (a Authority) Name() string {
	if a.Addr.IsValid() {
		return a.Addr.String()
	}
	return a.Host
}

// idnaProfile converts names for lookup: UTS #46 non-transitional mapping with the bidi and
// joiner checks, as browsers do, so that a look-alike name maps to its own distinct xn-- form.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.CheckJoiners(true),
	idna.Transitional(false),
	idna.StrictDomainName(false), // '_' is common in real names; labels are checked below
)

// ParseAuthority normalises host[:port]. defaultPort is used when the port is absent; 0 means
// the port is required (CONNECT).
func ParseAuthority(s string, defaultPort uint16) (Authority, error) {
	host, port, err := splitHostPort(s, defaultPort)
	if err != nil {
		return Authority{}, err
	}
	if strings.HasPrefix(host, "[") {
		addr, err := parseBracketed(host)
		return Authority{Addr: addr, Port: port}, err
	}
	name, addr, err := NormalizeHost(host)
	if err != nil {
		return Authority{}, err
	}
	return Authority{Host: name, Addr: addr, Port: port}, nil
}

// splitHostPort separates the port, parsing it strictly.
func splitHostPort(s string, defaultPort uint16) (string, uint16, error) {
	if s == "" || len(s) > 300 {
		return "", 0, fmt.Errorf("%w: empty or too long", ErrMalformed)
	}
	host, portStr, hasPort := s, "", false
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%w: unclosed '['", ErrMalformed)
		}
		host, rest := s[:end+1], s[end+1:]
		if rest != "" {
			if rest[0] != ':' {
				return "", 0, fmt.Errorf("%w: text after ']'", ErrMalformed)
			}
			portStr, hasPort = rest[1:], true
		}
		return finishPort(host, portStr, hasPort, defaultPort)
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, portStr, hasPort = s[:i], s[i+1:], true
	}
	return finishPort(host, portStr, hasPort, defaultPort)
}

func finishPort(host, portStr string, hasPort bool, defaultPort uint16) (string, uint16, error) {
	if !hasPort {
		if defaultPort == 0 {
			return "", 0, fmt.Errorf("%w: port required", ErrMalformed)
		}
		return host, defaultPort, nil
	}
	port, err := ParsePort(portStr)
	return host, port, err
}

// ParsePort parses a decimal port 1-65535 with no sign, spaces or leading zeros.
func ParsePort(s string) (uint16, error) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, fmt.Errorf("%w: bad port %q", ErrMalformed, s)
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: bad port %q", ErrMalformed, s)
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0, fmt.Errorf("%w: port %q out of range", ErrMalformed, s)
	}
	return uint16(n), nil
}

// parseBracketed parses "[v6]" without a zone.
func parseBracketed(h string) (netip.Addr, error) {
	inner := h[1 : len(h)-1]
	if strings.ContainsRune(inner, '%') {
		return netip.Addr{}, fmt.Errorf("%w: zone id in %q", ErrMalformed, h)
	}
	addr, err := netip.ParseAddr(inner)
	if err != nil || !addr.Is6() {
		return netip.Addr{}, fmt.Errorf("%w: bad IPv6 literal %q", ErrMalformed, h)
	}
	return addr, nil
}

// NormalizeHost returns the canonical form of a host without port: a name, or a canonical IPv4
// literal as addr. It refuses every other numeric spelling of an address.
func NormalizeHost(h string) (name string, addr netip.Addr, err error) {
	h = strings.TrimSuffix(h, ".")
	if h == "" || !utf8.ValidString(h) || strings.ContainsAny(h, "%@/\\?#[]: \t\r\n") {
		return "", netip.Addr{}, fmt.Errorf("%w: bad host %q", ErrMalformed, h)
	}
	if a, perr := netip.ParseAddr(h); perr == nil && a.Is4() {
		return "", a, nil
	}
	ascii, err := idnaProfile.ToASCII(h)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("%w: host %q: not a valid international name", ErrMalformed, h)
	}
	ascii = strings.ToLower(ascii)
	if a, perr := netip.ParseAddr(ascii); perr == nil && a.Is4() {
		return "", a, nil // a full-width or otherwise mapped spelling of a dotted quad
	}
	if err := checkLabels(ascii); err != nil {
		return "", netip.Addr{}, err
	}
	return ascii, netip.Addr{}, nil
}

// checkLabels enforces label syntax and refuses names whose last label is numeric, which URL
// parsers and resolvers read as an IPv4 address in some non-canonical spelling.
func checkLabels(name string) error {
	if len(name) > 253 {
		return fmt.Errorf("%w: host name longer than 253 bytes", ErrMalformed)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("%w: empty or long label in %q", ErrMalformed, name)
		}
		for _, c := range []byte(l) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%w: character %q in host %q", ErrMalformed, c, name)
			}
		}
	}
	if looksNumeric(labels[len(labels)-1]) {
		return fmt.Errorf("%w: numeric host %q is not a canonical IPv4 address", ErrMalformed, name)
	}
	return nil
}

// looksNumeric reports whether a label is a decimal, octal or hex number (WHATWG URL's test for
// an IPv4 part).
func looksNumeric(l string) bool {
	digits := strings.TrimPrefix(l, "0x")
	if digits == "" {
		return l == "0x"
	}
	hex := len(digits) != len(l)
	for _, c := range []byte(digits) {
		if !(c >= '0' && c <= '9' || hex && (c >= 'a' && c <= 'f')) {
			return false
		}
	}
	return true
}
