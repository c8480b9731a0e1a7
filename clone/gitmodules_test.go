package clone

import (
	"fmt"
	"strings"
	"testing"
)

// gitmodulesWith is a .gitmodules with one entry per url, each named and placed s<i>.
func gitmodulesWith(urls ...string) []byte {
	var b strings.Builder
	for i, u := range urls {
		fmt.Fprintf(&b, "[submodule \"s%d\"]\n\tpath = s%d\n\turl = %s\n", i, i, u)
	}
	return []byte(b.String())
}

// refusedOnly returns the refusals among findings (warnings left out).
func refusedOnly(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if !strings.HasPrefix(f.Reason, "warning: ") {
			out = append(out, f)
		}
	}
	return out
}

// TestGitmodulesURLClasses: each class of submodule URL git fsck refuses (and the stricter ones
// SECURITY.md lists) is refused, with the red team's cases and variants of each; the controls
// are the plain URLs of the same shapes, which pass.
func TestGitmodulesURLClasses(t *testing.T) {
	refused := []struct {
		class, url, want string
	}{
		// Empty or missing host once decoded (curl reads the path as the host: CVE-2020-11008).
		{"empty host", "https:///x", "has no host"},
		{"empty host", "https://user@/x", "has no host"},
		{"empty host", "https://:443/x", "has no host"},
		{"empty host", "ssh:///srv/x", "has no host"},
		{"empty host", "http:///example.com/x", "has no host"},
		{"empty host", "https://%20/x", "has no host"},
		// A relative ../ walk that reaches a ':' or '/' (count_leading_dotdots).
		{"dotdot walk", "../../../..//host/x", "climbs with ../"},
		{"dotdot walk", "..//host/x", "climbs with ../"},
		{"dotdot walk", "../:x", "climbs with ../"},
		{"dotdot walk", "./../../:/evil/x", "climbs with ../"},
		{"dotdot walk", `../\\host\\x`, "climbs with ../"}, // config text for ../\host\x
		// Newlines and other control characters, percent-encoded.
		{"encoded newline", "https://example.com/x%0a", "control character once percent-decoded"},
		{"encoded newline", "https://example.com/%0d/x", "control character once percent-decoded"},
		{"encoded newline", "https://ex%0Aample.com/x", "control character once percent-decoded"},
		{"encoded newline", "../x%0aprotocol=evil", "control character once percent-decoded"},
		{"encoded newline", "git://example.com/%00x", "control character once percent-decoded"},
		{"encoded newline", "git@example.com:x%0a", "control character once percent-decoded"},
		// A component starting with '-' once decoded: host, user, path; brackets hiding one.
		{"dash", "ssh://[-oProxyCommand=x]/r", "brackets that is not an IP"},
		{"dash", "ssh://[-oProxyCommand=x]:22/r", "brackets that is not an IP"},
		{"dash", "ssh://%2doProxyCommand=x/r", "host component starting with '-'"},
		{"dash", "ssh://-oProxyCommand=x@host/r", "user component starting with '-'"},
		{"dash", "ssh://%2Dx@host/r", "user component starting with '-'"},
		{"dash", "https://host/-x/r", "path component starting with '-'"},
		{"dash", "https://host/a/%2dx", "path component starting with '-'"},
		{"dash", "git@host:-x/r", "local path"},
		{"dash", "git@host:a/-x", "path component starting with '-'"},
		{"dash", "./-upstream", "path component starting with '-'"},
		{"dash", "../%2dx", "path component starting with '-'"},
		{"dash", "%2dx", "starts with '-'"},
		{"dash", "-x", "starts with '-'"},
		// Brackets that are not an address.
		{"brackets", "https://[example.com]/x", "brackets that is not an IP"},
		{"brackets", "https://[fe80/x", "brackets that is not an IP"},
		{"brackets", "https://[::1/x", "transport helper"}, // unclosed: its "::" is not inside brackets
	}
	for _, c := range refused {
		t.Run(c.class+" "+c.url, func(t *testing.T) {
			ps := refusedOnly(GitmodulesProblems(gitmodulesWith(c.url)))
			if len(ps) == 0 {
				t.Fatalf("url %q accepted", c.url)
			}
			if !strings.Contains(ps[0].Reason, c.want) {
				t.Errorf("url %q refused with %q, want %q", c.url, ps[0].Reason, c.want)
			}
			if ps[0].Path != "submodule.s0.url" {
				t.Errorf("finding names %q, want submodule.s0.url", ps[0].Path)
			}
		})
	}
	controls := []string{
		"https://example.com/x.git", "https://user@example.com:8443/a/b.git", "https://[::1]:8443/x",
		"https://example.com/a%20b/x-y.git", "ssh://git@example.com:22/x.git", "ssh://git@[fe80::1%25eth0]/x",
		"git@github.com:org/repo-x.git", "../sibling.git", "./sub", "../../org/x.git", "./../x", "git://example.com/x",
	}
	if ps := refusedOnly(GitmodulesProblems(gitmodulesWith(controls...))); len(ps) != 0 {
		t.Errorf("control urls refused: %v", ps)
	}
}

// TestGitmodulesNestedNames: a submodule name inside another's as a path is refused (git's
// "hippo" and "hippo/hooks"), also with another case or '\' as the separator; names that only
// share a prefix pass.
func TestGitmodulesNestedNames(t *testing.T) {
	mk := func(names ...string) []byte {
		var b strings.Builder
		for i, n := range names {
			fmt.Fprintf(&b, "[submodule %q]\n\tpath = p%d\n\turl = https://example.com/%d\n", n, i, i)
		}
		return []byte(b.String())
	}
	for _, pair := range [][2]string{
		{"hippo", "hippo/hooks"}, {"hippo/hooks", "hippo"}, {"a", "a/b/c"},
		{"Hippo", "hippo/hooks"}, {"hippo", `hippo\hooks`}, {"x/y", "x/y/objects"},
	} {
		ps := refusedOnly(GitmodulesProblems(mk(pair[0], pair[1])))
		if len(ps) != 1 || !strings.Contains(ps[0].Reason, "is nested in submodule") {
			t.Errorf("names %q: %v, want one nesting refusal", pair, ps)
		}
	}
	for _, pair := range [][2]string{{"hippo", "hippopotamus"}, {"hippo", "hippo-hooks"}, {"a/b", "a/c"}} {
		if ps := refusedOnly(GitmodulesProblems(mk(pair[0], pair[1]))); len(ps) != 0 {
			t.Errorf("names %q: %v, want accepted", pair, ps)
		}
	}
}
