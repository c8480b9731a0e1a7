//go:build linux

package inside

import (
	"strings"
	"testing"
)

// TestExecMount: a mount stays executable only when the nearest root at or above it is an exec
// root (a system directory, exec.allow, the command); a grant, /tmp, or no root at all (the
// sandbox's own /, /proc, /dev, /etc files, /run/corral) makes it noexec.
func TestExecMount(t *testing.T) {
	exec := []string{"/usr", "/home/u/proj/bin", "/opt/tool", "/home/u/proj/run.sh", "/srv/both"}
	data := []string{"/home/u/proj", "/opt/tool/cache", "/tmp", "/srv/both"}
	cases := map[string]bool{
		"/usr": true, "/usr/local": true, "/home/u/proj/bin": true, "/home/u/proj/bin/sub": true,
		"/home/u/proj/run.sh": true, "/opt/tool": true, "/srv/both": true,
		"/home/u/proj": false, "/home/u/proj/vendor": false, "/home/u/proj/binary": false,
		"/opt/tool/cache": false, "/opt/tool/cache/x": false, "/tmp": false, "/": false,
		"/proc": false, "/dev": false, "/dev/pts": false, "/etc/passwd": false, "/run/corral/init": false,
		"/usr2": false,
	}
	for point, want := range cases {
		if got := execMount(point, exec, data); got != want {
			t.Errorf("execMount(%q) = %v, want %v", point, got, want)
		}
	}
}

// TestParseMountinfo: the mount point is the fifth field with mountinfo's octal escapes undone,
// so that a grant whose path holds a space or a backslash is found and made noexec.
func TestParseMountinfo(t *testing.T) {
	in := "77 76 0:44 /newroot / rw,nosuid,nodev,relatime - tmpfs tmpfs rw\n" +
		`141 140 254:0 /a\040b /tmp/a\040b\134c\011d ro,nosuid,nodev,noexec,relatime - ext4 /dev/vda rw` + "\n"
	got, err := parseMountinfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].point != "/" || got[1].point != "/tmp/a b\\c\td" {
		t.Fatalf("parsed %+v", got)
	}
	if hasOpt(got[0], "noexec") || !hasOpt(got[1], "noexec") || !hasOpt(got[1], "ro") {
		t.Errorf("options: %+v", got)
	}
	for _, bad := range []string{"1 2 3\n", `1 2 0:1 / /a\04 rw - x x rw` + "\n", `1 2 0:1 / /a\9zz rw - x x rw` + "\n"} {
		if _, err := parseMountinfo(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMountinfo(%q): no error", bad)
		}
	}
}
