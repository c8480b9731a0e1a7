package provision

// This file runs the real rendered guest scripts as root against a throwaway root directory:
// a private mount namespace with a tmpfs root, a copy of the host's /etc, the host's /usr
// bound read-only and an empty /usr/local, then chroot. Nothing the scripts write reaches the
// host, and the tmpfs root is its own filesystem, so the scripts' "find / -xdev" scans only it.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// setupRoot builds the root inside the namespace and runs $1 (a shell command) chrooted in it.
// /corral holds the rendered scripts (bound from the test's temp dir).
const setupRoot = `set -eu
R=$(mktemp -d /tmp/corral-root.XXXXXX)
mount -t tmpfs -o mode=0755 tmpfs "$R"
mkdir -p "$R/etc" "$R/usr" "$R/proc" "$R/dev" "$R/run" "$R/tmp" "$R/var/lib" "$R/home" "$R/root" "$R/opt" "$R/corral" "$R/sys"
chmod 1777 "$R/tmp"
# Other programs on the host may be editing /etc meanwhile: lock and temp files vanish under cp.
# A copy taken while useradd runs can pair a new group with an old gshadow: retry until the
# account files agree with their shadow files.
names() { cut -d: -f1 "$1" | sort; }
for try in 1 2 3 4 5; do
	cp -a /etc/. "$R/etc/" 2>/dev/null || true
	rm -f "$R"/etc/*.lock
	[ "$(names "$R/etc/group")" = "$(names "$R/etc/gshadow")" ] && [ "$(names "$R/etc/passwd")" = "$(names "$R/etc/shadow")" ] && break
	echo "copy $try of /etc was inconsistent, again" >&2
	sleep 1
done
for f in passwd group shadow gshadow sudoers; do [ -s "$R/etc/$f" ] || { echo "copy of /etc/$f missing" >&2; exit 97; }; done
ln -s usr/bin "$R/bin"; ln -s usr/sbin "$R/sbin"; ln -s usr/lib "$R/lib"; ln -s usr/lib64 "$R/lib64"
ln -s /run "$R/var/run"
mount --rbind /usr "$R/usr"
mount -o remount,bind,ro "$R/usr"
mount -t tmpfs -o mode=0755 tmpfs "$R/usr/local"
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
mount -t tmpfs -o mode=0755 tmpfs "$R/run"
mount --bind "$CORRAL_DIR" "$R/corral"
exec chroot "$R" /bin/sh -c "$1"
`

// guestRoot is one test's directory of rendered scripts.
type guestRoot struct {
	t   *testing.T
	dir string
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs guest scripts in a private mount namespace (CI runs as root)")
	}
	for _, tool := range []string{"unshare", "chroot", "sudo", "visudo", "gpasswd", "useradd", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (scripts/setup.sh installs it): %v", tool, err)
		}
	}
}

// newGuestRoot renders opts and writes every script, plus the guard check, to a temp dir.
func newGuestRoot(t *testing.T, opts Options) *guestRoot {
	t.Helper()
	b, err := Render(opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, s := range b.Scripts {
		if err := os.WriteFile(filepath.Join(dir, s.Name), []byte(s.Body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &guestRoot{t: t, dir: dir}
}

// script returns the rendered script name.
func (g *guestRoot) script(name string) string {
	g.t.Helper()
	b, err := os.ReadFile(filepath.Join(g.dir, name))
	if err != nil {
		g.t.Fatal(err)
	}
	return string(b)
}

// write adds a file to /corral.
func (g *guestRoot) write(name, body string) {
	g.t.Helper()
	if err := os.WriteFile(filepath.Join(g.dir, name), []byte(body), 0o755); err != nil {
		g.t.Fatal(err)
	}
}

// scriptBody returns the body of the script name in b.
func scriptBody(t *testing.T, b Bundle, name string) string {
	t.Helper()
	for _, s := range b.Scripts {
		if s.Name == name {
			return s.Body
		}
	}
	t.Fatalf("no script %s in the bundle", name)
	return ""
}

// run runs a shell command chrooted in a fresh root, inside network namespace ns when ns is
// not "". It returns stdout, stderr and the exit code.
func (g *guestRoot) run(ns, cmd string) (string, string, int) {
	g.t.Helper()
	setup := filepath.Join(g.dir, ".setup.sh")
	if err := os.WriteFile(setup, []byte(setupRoot), 0o755); err != nil {
		g.t.Fatal(err)
	}
	argv := []string{"unshare", "-m", "--propagation", "private", "/bin/sh", setup, cmd}
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	// A hung script must not hang the suite: kill its whole process group after three minutes.
	ctx, cancel := context.WithTimeout(g.t.Context(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	c.Env = append(os.Environ(), "CORRAL_DIR="+g.dir)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		g.t.Fatalf("run %v: %v", argv, err)
	}
	return out.String(), errb.String(), code
}

// testNetns makes a network namespace named prefix plus this process's id, deleted when the
// test ends.
func testNetns(t *testing.T, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s%d", prefix, os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	return ns
}

// lastJSON returns the last line of out that looks like a JSON object.
func lastJSON(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "{") {
			return lines[i]
		}
	}
	return ""
}
