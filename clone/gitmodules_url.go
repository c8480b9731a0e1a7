package clone

// Submodule URL rules, at least as strict as git fsck's check_submodule_url (fsck.c) and the
// credential parser it calls, applied to the URL as written and after percent-decoding:
//   - no '-' at the start, and no user, host or path component starting with '-' once decoded
//     (also a host in [brackets], which must hold an IP address);
//   - no control character once decoded: %0a and %0d smuggle lines into git's credential
//     protocol (CVE-2020-5260), %00 and ESC cut or repaint what a reviewer reads;
//   - a scheme URL names a host once decoded ("https:///x" has none, and curl would take the
//     first path component as the host: CVE-2020-11008);
//   - a relative URL ("./", "../") whose leading "../" walk is followed by ':' or '/' (or '\') is
//     refused, as git's count_leading_dotdots rule does: resolved against the superproject's
//     remote, "../../..//evil/x" climbs past the host and becomes a URL naming another host;
//   - transport helpers ("x::"), file:, absolute, "~" and other local paths are refused; git://
//     and http:// are warned (no integrity); scp-like user@host:path is accepted.

import (
	"fmt"
	"net/netip"
	"strings"
)

// submoduleURLProblem says why a submodule url is refused ("warning: " first when it is only
// flagged), or "".
func submoduleURLProblem(u string) string {
	lower := strings.ToLower(u)
	decoded := percentDecode(u)
	switch {
	case u == "":
		return "url is empty"
	case strings.HasPrefix(u, "-") || strings.HasPrefix(decoded, "-"):
		return fmt.Sprintf("url %q starts with '-'", u)
	case hasControl(decoded):
		return fmt.Sprintf("url %q holds a control character once percent-decoded (%%0a, %%0d smuggle lines into git's credential protocol)", u)
	case strings.Contains(withoutBrackets(u), "::"):
		return fmt.Sprintf("url %q uses a transport helper (ext::, fd::…), which runs programs", u)
	case strings.HasPrefix(u, "./"), strings.HasPrefix(u, "../"):
		return relativeURLProblem(u)
	case strings.HasPrefix(lower, "file:"):
		return fmt.Sprintf("url %q reads a local repository", u)
	case strings.HasPrefix(u, "/"), strings.HasPrefix(u, `\`), strings.HasPrefix(u, "~"), len(u) >= 2 && u[1] == ':' && !strings.Contains(u, "@"):
		return fmt.Sprintf("url %q is a local path", u)
	}
	if scheme, rest, ok := strings.Cut(u, "://"); ok {
		return schemeURLProblem(u, strings.ToLower(scheme), rest)
	}
	if scpLike.MatchString(u) {
		_, path, _ := strings.Cut(u, ":")
		return dashComponent(u, "path", path)
	}
	return fmt.Sprintf("url %q is a local path", u)
}

// relativeURLProblem applies git's count_leading_dotdots rule, then the '-' rule to the rest.
func relativeURLProblem(u string) string {
	rest, dotdots := leadingDots(u)
	if dotdots > 0 && strings.ContainsAny(rest[:min(len(rest), 1)], `:/\`) {
		return fmt.Sprintf("url %q climbs with ../ into a ':' or '/' (resolved against the superproject's remote it would name another host)", u)
	}
	return dashComponent(u, "path", rest)
}

// leadingDots strips the leading "./" and "../" of a relative URL and counts the "../".
func leadingDots(u string) (rest string, dotdots int) {
	rest = u
	for {
		if r, ok := strings.CutPrefix(rest, "../"); ok {
			rest, dotdots = r, dotdots+1
		} else if r, ok := strings.CutPrefix(rest, "./"); ok {
			rest = r
		} else {
			return rest, dotdots
		}
	}
}

// climbsOutOf says why relative URL u, resolved against origin as git resolves it (each "../"
// drops one path component of origin), would leave origin's path and name another host, or "".
func climbsOutOf(u, origin string) string {
	_, dotdots := leadingDots(u)
	path := origin
	if _, rest, ok := strings.Cut(origin, "://"); ok {
		_, path, _ = strings.Cut(rest, "/")
	} else if _, rest, ok := strings.Cut(origin, ":"); ok {
		path = rest
	}
	levels := 0
	for _, c := range strings.Split(path, "/") {
		if c != "" {
			levels++
		}
	}
	if dotdots > levels {
		return fmt.Sprintf("url %q climbs %d levels with ../, out of origin %q's path (%d levels): it would name another host", u, dotdots, origin, levels)
	}
	return ""
}

// schemeURLProblem checks scheme://[user@]host[:port]/path: a host, no component starting with
// '-' once decoded, and an accepted scheme.
func schemeURLProblem(u, scheme, rest string) string {
	authority, path, _ := strings.Cut(rest, "/")
	user, host := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		user, host = authority[:i], authority[i+1:]
	}
	if h, ok := strings.CutPrefix(host, "["); ok {
		inner, _, closed := strings.Cut(h, "]")
		ip, _, _ := strings.Cut(percentDecode(inner), "%")
		if _, err := netip.ParseAddr(ip); !closed || err != nil {
			return fmt.Sprintf("url %q has a host in brackets that is not an IP address", u)
		}
		host = inner
	} else {
		host, _, _ = strings.Cut(host, ":")
	}
	if strings.TrimSpace(percentDecode(host)) == "" {
		return fmt.Sprintf("url %q has no host (curl would read the path as one)", u)
	}
	name, _, _ := strings.Cut(user, ":")
	for _, c := range []struct{ what, v string }{{"user", name}, {"host", host}, {"path", path}} {
		if why := dashComponent(u, c.what, c.v); why != "" {
			return why
		}
	}
	switch scheme {
	case "https", "ssh", "git+ssh", "ssh+git":
		return ""
	case "git", "http":
		return fmt.Sprintf("warning: url %q has no integrity protection", u)
	}
	return fmt.Sprintf("url %q: scheme %q is not accepted", u, scheme)
}

// withoutBrackets is u without its first [...] (an IPv6 host's colons are not a helper's "::").
func withoutBrackets(u string) string {
	before, rest, ok := strings.Cut(u, "[")
	if !ok {
		return u
	}
	_, after, ok := strings.Cut(rest, "]")
	if !ok {
		return u
	}
	return before + after
}

// dashComponent refuses a value any of whose '/'-separated components starts with '-' once
// percent-decoded.
func dashComponent(u, what, v string) string {
	for _, c := range strings.Split(percentDecode(v), "/") {
		if strings.HasPrefix(c, "-") {
			return fmt.Sprintf("url %q has a %s component starting with '-' once percent-decoded (%q)", u, what, c)
		}
	}
	return ""
}

// percentDecode decodes %XX sequences as git's url_decode does: an invalid one is kept as is.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
