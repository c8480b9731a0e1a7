package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseAuthority(t *testing.T) {
	good := map[string]string{
		"example.com:443":          "example.com:443",
		"EXAMPLE.com.:443":         "example.com:443",
		"bücher.example:443":       "xn--bcher-kva.example:443",
		"BÜCHER.example:443":       "xn--bcher-kva.example:443",
		"93.184.216.34:80":         "93.184.216.34:80",
		"[2606:2800::1]:443":       "[2606:2800::1]:443",
		"[2606:2800:0::1]:443":     "[2606:2800::1]:443",
		"a_b.example:1":            "a_b.example:1",
		"x.example:65535":          "x.example:65535",
		"１２７.０.０.１:443":            "127.0.0.1:443", // full-width digits map to the canonical quad
		"xn--bcher-kva.example:80": "xn--bcher-kva.example:80",
	}
	for in, want := range good {
		a, err := ParseAuthority(in, 0)
		if err != nil || a.String() != want {
			t.Errorf("ParseAuthority(%q) = %v, %v; want %s", in, a, err, want)
		}
	}
	bad := []string{
		"", "example.com", "example.com:", ":443", "example.com:0443", "example.com:65536",
		"example.com:65979", "example.com:-1", "example.com:+443", "example.com: 443", "example.com:0",
		"2130706433:443", "0x7f.1:443", "0x7f000001:443", "127.1:443", "0177.0.0.1:443",
		"127.0.0.01:443", "1.2.3.4.5:443", "[::1%lo]:443", "[fe80::1%25eth0]:443", "[127.0.0.1]:443",
		"[::1:443", "[::1]x:443", "::1:443", "a..b:443", ".example:443", "example..:443",
		"exa mple.com:443", "user@example.com:443", "exa%6dple.com:443", "example.com/x:443",
		"-exa\x00mple.com:443", strings.Repeat("a", 64) + ".com:443", strings.Repeat("a.", 130) + "com:443",
		"a.b.123:443", "a.0x1f:443", "\u202eexample.com:443",
	}
	for _, in := range bad {
		if a, err := ParseAuthority(in, 0); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseAuthority(%q) = %v, %v; want ErrMalformed", in, a, err)
		}
	}
	if a, err := ParseAuthority("example.com", 80); err != nil || a.Port != 80 {
		t.Errorf("default port: %v %v", a, err)
	}
}

func TestIsPublic(t *testing.T) {
	public := []string{"93.184.216.34", "1.1.1.1", "8.8.8.8", "2606:4700::1111", "2a00:1450::1", "100.63.255.255", "100.128.0.0"}
	for _, s := range public {
		if !IsPublic(netip.MustParseAddr(s)) {
			t.Errorf("%s should be public", s)
		}
	}
	forbidden := []string{
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "100.127.255.255", "127.0.0.1", "127.255.255.254",
		"169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1", "192.88.99.1",
		"192.168.5.2", "198.18.0.1", "198.19.255.255", "198.51.100.1", "203.0.113.1", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::ffff:93.184.216.34", "::ffff:127.0.0.1", "::93.184.216.34", "64:ff9b::5db8:d822",
		"64:ff9b:1::1", "100::1", "2001::1", "2001:0:4136:e378::1", "2001:db8::1", "2002:5db8:d822::1",
		"3fff::1", "fc00::1", "fd12:3456::1", "fe80::1", "fec0::1", "ff02::1", "ff0e::1",
	}
	for _, s := range forbidden {
		if IsPublic(netip.MustParseAddr(s)) {
			t.Errorf("%s should be forbidden", s)
		}
	}
	if IsPublic(netip.MustParseAddr("fe80::1%eth0")) || IsPublic(netip.Addr{}) {
		t.Error("zoned or invalid address accepted")
	}
}

func TestAllowList(t *testing.T) {
	l, err := ParseAllowList([]string{
		"Example.COM.", "*.wild.example", "api.example:8443", "10.1.2.3", "10.9.0.0/16:5432",
		"fd00::/8", "[fd00::1]:8080", "Bücher.example",
	})
	if err != nil {
		t.Fatal(err)
	}
	names := []struct {
		host string
		port uint16
		ok   bool
	}{
		{"example.com", 443, true}, {"example.com", 80, true}, {"example.com", 8080, false},
		{"www.example.com", 443, false}, {"a.wild.example", 443, true}, {"a.b.wild.example", 80, true},
		{"wild.example", 443, false}, {"evil-wild.example", 443, false}, {"evilwild.example", 443, false},
		{"api.example", 8443, true}, {"api.example", 443, false}, {"xn--bcher-kva.example", 443, true},
		{"10.1.2.3", 443, false},
	}
	for _, n := range names {
		if _, ok := l.MatchName(n.host, n.port); ok != n.ok {
			t.Errorf("MatchName(%s, %d) = %v", n.host, n.port, ok)
		}
	}
	addrs := []struct {
		addr string
		port uint16
		ok   bool
	}{
		{"10.1.2.3", 443, true}, {"10.1.2.3", 22, false}, {"10.1.2.4", 443, false},
		{"10.9.200.1", 5432, true}, {"10.9.200.1", 443, false}, {"::ffff:10.1.2.3", 443, false},
		{"fd12::1", 443, true}, {"fd00::1", 8080, true}, {"fd00::2", 8080, false},
	}
	for _, a := range addrs {
		if _, ok := l.MatchAddr(netip.MustParseAddr(a.addr), a.port); ok != a.ok {
			t.Errorf("MatchAddr(%s, %d) = %v", a.addr, a.port, ok)
		}
	}
	var texts []string
	for _, r := range l.Rules() {
		texts = append(texts, r.Text)
	}
	want := "example.com *.wild.example api.example:8443 10.1.2.3 10.9.0.0/16:5432 fd00::/8 [fd00::1]:8080 xn--bcher-kva.example"
	if strings.Join(texts, " ") != want {
		t.Errorf("normalised rules %q", strings.Join(texts, " "))
	}
	for _, bad := range []string{"", "*", "*.", "*.10.0.0.1", "a b", "x:0", "x:99999", "::ffff:1.2.3.4", "10.0.0.0/33", "fe80::1%eth0", "[fd00::1", "2130706433"} {
		if _, err := ParseAllowList([]string{bad}); err == nil {
			t.Errorf("entry %q accepted", bad)
		}
	}
}

// TestLogInjection: hostile text in a logged field can neither end its line nor add fields.
func TestLogInjection(t *testing.T) {
	tb := startBroker(t, []string{"public.test"}, fakeResolver{}, nil, nil)
	hostile := []string{
		`x","decision":"allow","y":"1:443`,
		"x\u2028\u2029{}\u0085:443",
		"x\xff\xfe:443",
	}
	for _, h := range hostile {
		resp, _, _ := tb.roundTrip(t, "CONNECT "+h+" HTTP/1.1\r\n"+authHeader+"\r\n")
		if resp.StatusCode != 400 {
			t.Errorf("%q: status %d", h, resp.StatusCode)
		}
	}
	tb.waitEntries(t, len(hostile))
	data, _ := os.ReadFile(tb.logPath)
	if strings.Count(string(data), "\n") != len(hostile) || strings.ContainsRune(string(data), '\u2028') {
		t.Errorf("log is not one escaped line per attempt:\n%s", data)
	}
	for i, e := range tb.entries(t) {
		if e.Decision != Deny {
			t.Errorf("line %d: decision %q", i, e.Decision)
		}
	}
	if es := tb.entries(t); es[0].Host != hostile[0] {
		t.Errorf("host logged as %q", es[0].Host)
	}
}

// TestLogConcurrentAndRotation: lines written by many goroutines and two Log values on the same
// file (two processes, in effect) are all whole, and the size cap rotates the file.
func TestLogConcurrentAndRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	ctx := context.Background()
	l1, err := OpenLog(ctx, path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	l2, _ := OpenLog(ctx, path, 1<<30)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			l := l1
			if g%2 == 1 {
				l = l2
			}
			for i := range 200 {
				l.Write(Entry{Time: time.Now(), Host: strings.Repeat("h", 2000) + fmt.Sprint(g, i), Decision: Deny})
			}
		})
	}
	wg.Wait()
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 1600 {
		t.Fatalf("%d lines, want 1600", len(lines))
	}
	for _, line := range lines {
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("torn line: %v", err)
		}
	}
	l1.Close()
	l2.Close()
	small, _ := OpenLog(ctx, path, 4096)
	for range 10 {
		small.Write(Entry{Host: strings.Repeat("r", 1000), Decision: Deny})
	}
	small.Close()
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 4096 {
		t.Errorf("log not capped: %v %v", fi.Size(), err)
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Errorf("no rotated file: %v", err)
	}
}

func TestNewSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	if len(a) != 64 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("secrets %q %q", a, b)
	}
}
