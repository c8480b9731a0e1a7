package broker

import (
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// threatResolver maps allowed names to every class of address the broker must refuse, plus one
// fake public address the dial hook sends to a loopback server.
var threatResolver = fakeResolver{
	"public.test":     {netip.MustParseAddr("93.184.216.34")},
	"rebind.test":     {netip.MustParseAddr("10.0.0.5")},
	"loop.test":       {netip.MustParseAddr("127.0.0.1")},
	"mixed.test":      {netip.MustParseAddr("93.184.216.35"), netip.MustParseAddr("127.0.0.1")},
	"meta.test":       {netip.MustParseAddr("169.254.169.254")},
	"cgnat.test":      {netip.MustParseAddr("100.64.0.1")},
	"gateway.test":    {netip.MustParseAddr("192.168.5.2")},
	"private.test":    {netip.MustParseAddr("172.16.0.1")},
	"unspec.test":     {netip.MustParseAddr("0.0.0.0")},
	"mcast.test":      {netip.MustParseAddr("224.0.0.251")},
	"doc.test":        {netip.MustParseAddr("192.0.2.1")},
	"benchnet.test":   {netip.MustParseAddr("198.18.0.1")},
	"bcast.test":      {netip.MustParseAddr("255.255.255.255")},
	"loop6.test":      {netip.MustParseAddr("::1")},
	"mapped.test":     {netip.MustParseAddr("::ffff:93.184.216.34")},
	"mappedlo.test":   {netip.MustParseAddr("::ffff:127.0.0.1")},
	"nat64.test":      {netip.MustParseAddr("64:ff9b::7f00:1")},
	"sixtofour.test":  {netip.MustParseAddr("2002:7f00:1::1")},
	"teredo.test":     {netip.MustParseAddr("2001:0:4136:e378:8000:63bf:80ff:fffe")},
	"ula.test":        {netip.MustParseAddr("fd00::1")},
	"linklocal6.test": {netip.MustParseAddr("fe80::1")},
	"mcast6.test":     {netip.MustParseAddr("ff02::1")},
}

// threatAllow allows every name above (so that only the address rules can refuse them) and a
// wildcard.
func threatAllow() []string {
	var allow []string
	for name := range threatResolver {
		allow = append(allow, name)
	}
	return append(allow, "*.wild.test")
}

// TestThreatClassesRefused is THREATS.md §4 as a table: each hostile request is refused with its
// status and the X-Corral header, produces exactly one valid JSON denial in the egress log, and
// makes the broker dial nothing at all.
func TestThreatClassesRefused(t *testing.T) {
	connect := func(target string) string {
		return "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n" + authHeader + "\r\n"
	}
	connectNoHost := func(target string) string {
		return "CONNECT " + target + " HTTP/1.1\r\n" + authHeader + "\r\n"
	}
	get := func(uri, extra string) string {
		return "GET " + uri + " HTTP/1.1\r\n" + extra + authHeader + "\r\n"
	}
	cases := []struct {
		class, raw string
		status     int
	}{
		// Forbidden addresses named literally.
		{"loopback literal", connect("127.0.0.1:443"), 403},
		{"metadata literal", connect("169.254.169.254:80"), 403},
		{"lima gateway literal", connect("192.168.5.2:443"), 403},
		{"private literal", connect("10.1.2.3:443"), 403},
		{"cgnat literal", connect("100.64.1.1:443"), 403},
		{"unspecified literal", connect("0.0.0.0:443"), 403},
		{"ipv6 loopback literal", connect("[::1]:443"), 403},
		{"ipv4-mapped literal", connect("[::ffff:127.0.0.1]:443"), 403},
		{"ipv4-mapped public literal", connect("[::ffff:93.184.216.34]:443"), 403},
		{"nat64 literal", connect("[64:ff9b::a9fe:a9fe]:443"), 403},
		{"6to4 literal", connect("[2002:a9fe:a9fe::1]:443"), 403},
		{"teredo literal", connect("[2001:0:4136:e378:8000:63bf:3fff:fdd2]:443"), 403},
		{"public literal not listed", connect("93.184.216.34:443"), 403},
		{"plain http private literal", get("http://10.0.0.1/", ""), 403},
		{"plain http metadata", get("http://169.254.169.254/latest/meta-data/", ""), 403},
		// Numeric spellings and zone ids.
		{"decimal ipv4", connect("2130706433:443"), 400},
		{"hex ipv4", connect("0x7f.1:443"), 400},
		{"short ipv4", connect("127.1:443"), 400},
		{"octal ipv4", connect("0177.0.0.1:443"), 400},
		{"octal single", connect("017700000001:443"), 400},
		{"leading zero quad", connect("127.000.000.001:443"), 400},
		{"zone id", connect("[fe80::1%25eth0]:443"), 400},
		{"raw zone id", connect("[fe80::1%eth0]:443"), 400},
		{"plain http decimal ipv4", get("http://2130706433/", ""), 400},
		// Allowed names resolving to forbidden addresses (DNS rebinding), mixed records.
		{"rebind to private", connect("rebind.test:443"), 403},
		{"rebind to loopback", connect("loop.test:443"), 403},
		{"mixed A records", connect("mixed.test:443"), 403},
		{"rebind to metadata", connect("meta.test:443"), 403},
		{"rebind to cgnat", connect("cgnat.test:443"), 403},
		{"rebind to gateway", connect("gateway.test:443"), 403},
		{"rebind to rfc1918", connect("private.test:443"), 403},
		{"rebind to unspecified", connect("unspec.test:443"), 403},
		{"rebind to multicast", connect("mcast.test:443"), 403},
		{"rebind to documentation", connect("doc.test:443"), 403},
		{"rebind to benchmarking", connect("benchnet.test:443"), 403},
		{"rebind to broadcast", connect("bcast.test:443"), 403},
		{"rebind to ::1", connect("loop6.test:443"), 403},
		{"rebind to ipv4-mapped public", connect("mapped.test:443"), 403},
		{"rebind to ipv4-mapped loopback", connect("mappedlo.test:443"), 403},
		{"rebind to nat64", connect("nat64.test:443"), 403},
		{"rebind to 6to4", connect("sixtofour.test:443"), 403},
		{"rebind to teredo", connect("teredo.test:443"), 403},
		{"rebind to ula", connect("ula.test:443"), 403},
		{"rebind to link-local v6", connect("linklocal6.test:443"), 403},
		{"rebind to multicast v6", connect("mcast6.test:443"), 403},
		{"plain http rebind", get("http://rebind.test/", ""), 403},
		// Wildcards, case, dots, IDNA, ports, garbage.
		{"not listed", connect("evil.test:443"), 403},
		{"wildcard lookalike", connect("evil-wild.test:443"), 403},
		{"wildcard suffix without dot", connect("evilwild.test:443"), 403},
		{"wildcard apex", connect("wild.test:443"), 403},
		{"idna lookalike cyrillic", connect("publiс.test:443"), 403},
		{"idna lookalike accent", connect("públic.test:443"), 403},
		{"punycode lookalike", connect("xn--pblic-2ta.test:443"), 403},
		{"two trailing dots", connect("public.test..:443"), 400},
		{"leading zero port", connect("public.test:0443"), 400},
		{"port out of range", connect("public.test:65979"), 400},
		{"port zero", connect("public.test:0"), 400},
		{"signed port", connect("public.test:+443"), 400},
		{"empty port", connect("public.test:"), 400},
		{"no port", connectNoHost("public.test"), 400},
		{"port not allowed", connect("public.test:8443"), 403},
		{"userinfo in authority", connectNoHost("user@public.test:443"), 400},
		{"percent in authority", connectNoHost("%70ublic.test:443"), 400},
		{"path in authority", connectNoHost("public.test:443/x"), 400},
		{"origin form connect", connectNoHost("/public.test"), 400},
		{"empty label", connectNoHost("public..test:443"), 400},
		{"underscore only garbage", connectNoHost("*:443"), 400},
		{"long label", connectNoHost(strings.Repeat("a", 64) + ".test:443"), 400},
		{"origin form get", get("/", "Host: public.test\r\n"), 400},
		{"https absolute uri", get("https://public.test/", ""), 400},
		{"userinfo in uri", get("http://public.test@127.0.0.1/", ""), 400},
		{"absolute uri host mismatch", get("http://public.test/", "Host: 127.0.0.1\r\n"), 400},
		{"connect host header mismatch", "CONNECT public.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n" + authHeader + "\r\n", 400},
		// Framing that request smuggling relies on.
		{"content-length and transfer-encoding", "POST http://public.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n" + authHeader + "\r\n0\r\n\r\n", 400},
		{"duplicate content-length", "POST http://public.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n" + authHeader + "\r\nhello", 400},
		{"differing content-length", "POST http://public.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n" + authHeader + "\r\nhello!", 400},
		{"transfer-encoding not chunked", "POST http://public.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n" + authHeader + "\r\n0\r\n\r\n", 400},
		{"duplicate transfer-encoding", "POST http://public.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n" + authHeader + "\r\n0\r\n\r\n", 400},
		{"obsolete line folding", "GET http://public.test/ HTTP/1.1\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n" + authHeader + "\r\n", 400},
		{"space before colon", "GET http://public.test/ HTTP/1.1\r\nContent-Length : 0\r\n" + authHeader + "\r\n", 400},
		{"duplicate host", "GET http://public.test/ HTTP/1.1\r\nHost: public.test\r\nHost: evil.test\r\n" + authHeader + "\r\n", 400},
		{"body on connect", "CONNECT public.test:443 HTTP/1.1\r\nContent-Length: 3\r\n" + authHeader + "\r\nabc", 400},
		{"oversized headers", "GET http://public.test/ HTTP/1.1\r\nX-Big: " + strings.Repeat("a", 20000) + "\r\n" + authHeader + "\r\n", 431},
		{"garbage request line", "HELLO\r\n\r\n", 400},
		{"bare blank request", "\r\n\r\n", 400},
		// Other local processes or boxes.
		{"no credentials", "CONNECT public.test:443 HTTP/1.1\r\n\r\n", 407},
		{"other box's secret", "CONNECT public.test:443 HTTP/1.1\r\nProxy-Authorization: Basic Ym94Om90aGVyLWJveC1zZWNyZXQ=\r\n\r\n", 407},
		{"bearer scheme", "CONNECT public.test:443 HTTP/1.1\r\nProxy-Authorization: Bearer " + testSecret + "\r\n\r\n", 407},
		{"two credentials", "CONNECT public.test:443 HTTP/1.1\r\n" + authHeader + "Proxy-Authorization: Basic eDp5\r\n\r\n", 407},
		{"plain http no credentials", "GET http://public.test/ HTTP/1.1\r\n\r\n", 407},
	}
	for _, tc := range cases {
		t.Run(tc.class, func(t *testing.T) {
			tb := startBroker(t, threatAllow(), threatResolver, nil, nil)
			resp, _, _ := tb.roundTrip(t, tc.raw)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d (body %q)", resp.StatusCode, tc.status, body)
			}
			if resp.Header.Get("X-Corral") == "" {
				t.Error("refusal has no X-Corral header")
			}
			if len(body) > 64 || strings.ContainsAny(string(body), "0123456789") {
				t.Errorf("refusal body %q is not short and generic", body)
			}
			if !resp.Close {
				t.Error("refusal did not close the connection")
			}
			es := tb.waitEntries(t, 1)
			if es[0].Decision != Deny || es[0].Status != tc.status || es[0].Reason == "" || es[0].Box != "test-abc123" {
				t.Errorf("log entry %+v, want one denial with status %d and a reason", es[0], tc.status)
			}
			if d := tb.dials.addrs(); len(d) != 0 {
				t.Errorf("broker dialled %v for a refused request", d)
			}
			if tc.status == http.StatusProxyAuthRequired && resp.Header.Get("Proxy-Authenticate") == "" {
				t.Error("407 without Proxy-Authenticate")
			}
		})
	}
}
