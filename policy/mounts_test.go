package policy

import (
	"strings"
	"testing"
)

// TestParseMountHostile: every hostile class of mounts entry is refused with the entry and the
// reason named; the controls beside them (the same shapes, well formed) are accepted.
func TestParseMountHostile(t *testing.T) {
	long := "/srv/" + strings.Repeat("a", MaxMountEntry)
	for _, c := range []struct{ name, entry, want string }{
		{"dotdot in host path", "/home/u/src/../.ssh:/srv/x", "clean"},
		{"dotdot in guest path", "/home/u/data:/srv/../etc", "clean"},
		{"relative host path", "data:/srv/x", "absolute"},
		{"dot host path", "./data:/srv/x", "absolute"},
		{"relative guest path", "/home/u/data:srv/x", "absolute"},
		{"tilde user form", "~root/x:/srv/x", "absolute"},
		{"tilde slash only", "~/:/srv/x", "absolute"},
		{"trailing slash", "/home/u/data/:/srv/x", "clean"},
		{"double slash", "/home/u//data:/srv/x", "clean"},
		{"NUL", "/home/u/data\x00:/srv/x", "control character"},
		{"newline", "/home/u/data:/srv/x\n- location: /", "control character"},
		{"carriage return", "/home/u/data\r:/srv/x", "control character"},
		{"escape", "/home/u/\x1b[2Jdata:/srv/x", "control character"},
		{"very long", "/home/u/data:" + long, "longer than"},
		{"empty", "", "want HOSTPATH:GUESTPATH"},
		{"no guest path", "/home/u/data", "want HOSTPATH:GUESTPATH"},
		{"colon in path", "/home/u/a:b:/srv/x", "want HOSTPATH:GUESTPATH"},
		{"unknown option", "/home/u/data:/srv/x:exec", "want HOSTPATH:GUESTPATH"},
		{"guest root", "/home/u/data:/", "must lie inside"},
		{"guest /etc", "/home/u/data:/etc", "must lie inside"},
		{"guest inside /etc", "/home/u/data:/etc/ssh", "must lie inside"},
		{"guest /usr", "/home/u/data:/usr", "must lie inside"},
		{"guest /usr/local/bin", "/home/u/data:/usr/local/bin", "must lie inside"},
		{"guest /proc", "/home/u/data:/proc", "must lie inside"},
		{"guest /root", "/home/u/data:/root", "must lie inside"},
		{"guest /var/lib", "/home/u/data:/var/lib/x", "must lie inside"},
		{"guest /tmp", "/home/u/data:/tmp/x", "must lie inside"},
		{"guest box user's ssh", "/home/u/data:/home/u.linux/.ssh", "must lie inside"},
		{"guest box user's home", "/home/u/data:/home/u.linux", "must lie inside"},
		{"guest project path", "/home/u/data:/home/u/src/proj", "must lie inside"},
		{"guest a root itself", "/home/u/data:/srv", "must lie inside"},
		{"guest root look-alike", "/home/u/data:/srvx/y", "must lie inside"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseMount(c.entry)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ParseMount(%q) = %v, want an error with %q", c.entry, err, c.want)
			}
			if !strings.Contains(err.Error(), "mounts entry") {
				t.Errorf("error %q does not name the entry", err)
			}
		})
	}
}

// TestParseMountAccepted is the control: the well-formed shapes parse, read-only unless :rw.
func TestParseMountAccepted(t *testing.T) {
	for _, c := range []struct {
		entry, host, guest string
		rw                 bool
	}{
		{"/home/u/data:/srv/data", "/home/u/data", "/srv/data", false},
		{"/home/u/data:/srv/data:ro", "/home/u/data", "/srv/data", false},
		{"/home/u/data:/srv/data:rw", "/home/u/data", "/srv/data", true},
		{"~/data:/mnt/data", "~/data", "/mnt/data", false},
		{"~:/opt/home", "~", "/opt/home", false},   // syntax only: the mount guard refuses ~ itself
		{"/:/data/root", "/", "/data/root", false}, // likewise
		{"/home/u/data:/media/d/e", "/home/u/data", "/media/d/e", false},
	} {
		m, err := ParseMount(c.entry)
		if err != nil {
			t.Errorf("ParseMount(%q): %v", c.entry, err)
			continue
		}
		if m.Host != c.host || m.Guest != c.guest || m.Writable != c.rw {
			t.Errorf("ParseMount(%q) = %+v, want host %q guest %q writable %v", c.entry, m, c.host, c.guest, c.rw)
		}
	}
}

// TestParseMountsOverlap: two entries may not share or nest guest paths; distinct ones may.
func TestParseMountsOverlap(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []string
		bad     bool
	}{
		{"duplicate guest path", []string{"/a/x:/srv/d", "/a/y:/srv/d:rw"}, true},
		{"nested guest path", []string{"/a/x:/srv/d", "/a/y:/srv/d/e"}, true},
		{"nested the other way", []string{"/a/x:/srv/d/e", "/a/y:/srv/d"}, true},
		{"control: siblings", []string{"/a/x:/srv/d", "/a/y:/srv/de"}, false},
		{"control: same host path twice", []string{"/a/x:/srv/d", "/a/x:/mnt/d"}, false},
	} {
		_, err := ParseMounts(c.entries)
		if (err != nil) != c.bad {
			t.Errorf("%s: ParseMounts(%q) = %v, want error %v", c.name, c.entries, err, c.bad)
		}
		if err != nil && !strings.Contains(err.Error(), c.entries[1]) {
			t.Errorf("%s: error %q does not name entry %q", c.name, err, c.entries[1])
		}
	}
}

// TestParsePorts: host ports below 1024, addresses, junk and a shared host port are refused;
// the controls parse.
func TestParsePorts(t *testing.T) {
	for _, c := range []struct {
		entries []string
		want    string
	}{
		{[]string{"80:8080"}, "below 1024"},
		{[]string{"0.0.0.0:8080:8080"}, "want HOSTPORT:GUESTPORT"},
		{[]string{"127.0.0.1:8080"}, "want HOSTPORT:GUESTPORT"},
		{[]string{"8080"}, "want HOSTPORT:GUESTPORT"},
		{[]string{"08080:8080"}, "want HOSTPORT:GUESTPORT"},
		{[]string{"8080:70000"}, "want HOSTPORT:GUESTPORT"},
		{[]string{"8080:8080", "8080:9090"}, "also forwarded"},
		{[]string{"8080:8080", "9090:9090"}, ""},
		{[]string{"1024:22"}, ""},
	} {
		ps, err := ParsePorts(c.entries)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ParsePorts(%q): %v", c.entries, err)
		case c.want == "" && (len(ps) != len(c.entries) || ps[0].Host == 0):
			t.Errorf("ParsePorts(%q) = %+v", c.entries, ps)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("ParsePorts(%q) = %v, want an error with %q", c.entries, err, c.want)
		}
	}
}
