//go:build linux

package sandbox

import (
	"slices"
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

// TestPlanExecMounts: exec.allow and the command are mounts of their own outside the system
// directories, read-write only when the nearest grant around them is fs.write, mounted after
// that grant; they and the system directories are the spec's ExecRoots.
func TestPlanExecMounts(t *testing.T) {
	m := &Manifest{Read: []string{"/home/u/proj/vendor"}, Write: []string{"/home/u/proj"},
		Exec: []string{"/home/u/proj/bin", "/home/u/proj/vendor/tool", "/usr/bin/python3", "/opt/x"}}
	h := testHost()
	h.Program = "/home/u/proj/run.sh"
	h.Links["/sbin"] = ""
	p, err := NewPlan(m, h, []string{"./run.sh"})
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(p.Args, " ")
	for _, want := range []string{"--bind /home/u/proj/bin /home/u/proj/bin", "--ro-bind /home/u/proj/vendor/tool /home/u/proj/vendor/tool",
		"--ro-bind /opt/x /opt/x", "--bind /home/u/proj/run.sh /home/u/proj/run.sh", "--cap-add CAP_SYS_ADMIN", "--cap-add CAP_SETPCAP"} {
		if !strings.Contains(argv, want) {
			t.Errorf("bubblewrap's argv lacks %q: %s", want, argv)
		}
	}
	if strings.Contains(argv, "python3") {
		t.Errorf("a program under /usr is mounted again: %s", argv)
	}
	if strings.Index(argv, "--bind /home/u/proj /home/u/proj") > strings.Index(argv, "--bind /home/u/proj/bin") {
		t.Errorf("exec.allow inside a grant is mounted before the grant: %s", argv)
	}
	for _, want := range []string{"/usr", "/sbin", "/home/u/proj/bin", "/home/u/proj/vendor/tool", "/usr/bin/python3", "/opt/x", "/home/u/proj/run.sh"} {
		if !slices.Contains(p.Spec.ExecRoots, want) {
			t.Errorf("ExecRoots %v lack %q", p.Spec.ExecRoots, want)
		}
	}
	if slices.Contains(p.Spec.ExecRoots, "/home/u/proj") || slices.Contains(p.Spec.ExecRoots, "/bin") {
		t.Errorf("ExecRoots %v hold a grant or a symlinked system directory", p.Spec.ExecRoots)
	}
}
