package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-corral/git-corral/vm"
)

// inheritedScript lists the command's descriptors, reads 9 and 200 and writes to 201, each
// line saying what it got.
const inheritedScript = `printf 'fds:'; for f in /proc/self/fd/*; do printf ' %s' "${f##*/}"; done; echo
for n in 9 200; do if read -r l <&$n; then echo "fd $n read: $l"; else echo "fd $n: closed"; fi; done
if echo leaked >&201; then echo "fd 201 written"; else echo "fd 201: closed"; fi`

// fakeLimactl records each call's arguments and open descriptors (the shell's own are 3, the
// directory it lists, and 10 and up, its script and saved streams) and fails.
const fakeLimactl = `#!/bin/sh
{ printf '%s:' "$*"; for f in /proc/self/fd/*; do printf ' %s' "${f##*/}"; done; echo; } >>"$0.calls"
exit 1
`

// TestInheritedDescriptors runs the built git-corral with descriptors its caller left open
// without close-on-exec, as a shell leaves 'git corral … 9<~/.ssh/key': the secret on 9 and
// on 200, a connected socket on 201; as root and as user nobody. None reaches what git corral
// starts:
//   - 'git corral sandbox -- CMD': the command reads nothing from 9 or 200, nothing arrives
//     on the socket, and it has only descriptors 0, 1, 2 (and 3, its own listing's); the
//     control is the same command started by this test with the same descriptors, which
//     reads the secret and writes to the socket;
//   - 'git corral run' (as nobody: root is refused before any box work): limactl, the child
//     that creates and starts the box (and through it Lima's hostagent and QEMU), sees none
//     of them; the control is the same fake limactl started by this test with them.
//
// The sessions themselves speak SSH in this process (golang.org/x/crypto/ssh, vm/session.go):
// no ssh program is started, and SSH has no way to pass a descriptor.
func TestInheritedDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the git-corral binaries")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bubblewrap is required (scripts/setup.sh installs it): %v", err)
	}
	dir, err := os.MkdirTemp("", "corral-inherit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{".", "../git-corral-sandbox"} {
		name := map[string]string{".": "git-corral", "../git-corral-sandbox": "git-corral-sandbox"}[pkg]
		if out, err := buildAsMakefile(name, filepath.Join(dir, name), pkg); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := []string{""}
	if os.Geteuid() == 0 {
		users = append(users, "nobody")
	}
	for _, user := range users {
		name := user
		if name == "" {
			name = fmt.Sprintf("uid %d", os.Geteuid())
		}
		t.Run("sandbox as "+name, func(t *testing.T) { inheritedSandbox(t, dir, secret, user) })
		if user != "" || os.Geteuid() != 0 {
			t.Run("run as "+name, func(t *testing.T) { inheritedRun(t, dir, secret, user) })
		}
	}
}

// inheritedSandbox is the sandbox half of TestInheritedDescriptors.
func inheritedSandbox(t *testing.T, dir, secret, user string) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	control := exec.Command(bash, "-c", inheritedScript)
	out, got := runInheriting(t, control, secret)
	for _, want := range []string{"fd 9 read: PRIVATE KEY", "fd 200 read: PRIVATE KEY", "fd 201 written"} {
		if !strings.Contains(out, want) {
			t.Fatalf("control (started by the test): %q missing, so the test does not leave the descriptors open:\n%s", want, out)
		}
	}
	if got != "leaked" {
		t.Fatalf("control: the socket's peer got %q, want \"leaked\"", got)
	}
	home := userDir(t, dir, "home-sandbox-"+user, user)
	cmd := asUser(user, home, nil, filepath.Join(dir, "git-corral"), "sandbox", "--", "bash", "-c", inheritedScript)
	cmd.Dir = home
	out, got = runInheriting(t, cmd, secret)
	if cmd.ProcessState.ExitCode() != 0 || strings.Contains(out, "PRIVATE KEY") || !strings.Contains(out, "fd 9: closed") ||
		!strings.Contains(out, "fd 200: closed") || !strings.Contains(out, "fd 201: closed") {
		t.Errorf("in the sandbox (status %d) an inherited descriptor was usable:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if !strings.Contains(out, "fds: 0 1 2 3\n") {
		t.Errorf("in the sandbox the command has descriptors beyond 0, 1, 2 and its listing's 3:\n%s", out)
	}
	if got != "" {
		t.Errorf("in the sandbox the socket's peer got %q, want nothing", got)
	}
}

// inheritedRun is the 'git corral run' half: a repository, a fake base image and a fake
// limactl that records what it was started with.
func inheritedRun(t *testing.T, dir, secret, user string) {
	home := userDir(t, dir, "home-run-"+user, user)
	limactl := filepath.Join(home, "limactl")
	if err := os.WriteFile(limactl, []byte(fakeLimactl), 0o755); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(home, ".corral", "images", vm.RecipeHash())
	mustMkdir(t, img)
	os.WriteFile(filepath.Join(img, "image.json"), []byte(`{"hash":"`+vm.RecipeHash()+`","arch":"`+vm.HostArch()+`"}`), 0o644)
	for _, f := range []string{vm.ImageDisk, vm.ImageKernel, vm.ImageInitrd} {
		os.WriteFile(filepath.Join(img, f), nil, 0o644)
	}
	proj := filepath.Join(home, "proj")
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	chownTree(t, home, user)

	runInheriting(t, exec.Command(limactl, "control"), secret)
	control := calls(t, limactl)
	if len(control) != 1 || !slices.Contains(control[0], "9") || !slices.Contains(control[0], "200") || !slices.Contains(control[0], "201") {
		t.Fatalf("control (the fake limactl started by the test): %q, want descriptors 9, 200 and 201", control)
	}
	os.Remove(limactl + ".calls")

	cmd := asUser(user, home, []string{"CORRAL_LIMACTL=" + limactl, "CORRAL_SYSTEM_IMAGES=" + filepath.Join(home, "none")},
		filepath.Join(dir, "git-corral"), "run", "--yes", "--", "true")
	cmd.Dir = proj
	out, _ := runInheriting(t, cmd, secret)
	seen := calls(t, limactl)
	if len(seen) == 0 {
		t.Fatalf("git corral run never started limactl, so nothing was tested:\n%s", out)
	}
	for _, c := range seen {
		for _, fd := range []string{"9", "200", "201"} {
			if slices.Contains(c, fd) {
				t.Errorf("limactl, started by git corral run, has the inherited descriptor %s: %q", fd, c)
			}
		}
	}
}

// runInheriting runs cmd with the secret open on 9 and 200 and a connected socket on 201
// (os/exec's ExtraFiles: without close-on-exec in the child, as a shell's redirections), and
// returns its output and what arrived on the socket's other end once everything the command
// started has let go of it.
func runInheriting(t *testing.T, cmd *exec.Cmd, secret string) (string, string) {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(pair[1], true)
	peer, sock := os.NewFile(uintptr(pair[1]), "peer"), os.NewFile(uintptr(pair[0]), "sock")
	defer peer.Close()
	files := make([]*os.File, 201-3+1)
	for _, n := range []int{9, 200} {
		f, err := os.Open(secret)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files[n-3] = f
	}
	files[201-3] = sock
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = &out, &out, files
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sock.Close()
	cmd.Wait()
	peer.SetReadDeadline(time.Now().Add(2 * time.Second))
	var got bytes.Buffer
	buf := make([]byte, 64)
	for {
		n, err := peer.Read(buf)
		got.Write(buf[:n])
		if err != nil || n == 0 {
			break
		}
	}
	return out.String(), strings.TrimSpace(got.String())
}

// asUser is argv run as user ("" for this process's own) in a clean environment with HOME
// and CORRAL_HOME in home, and extra.
func asUser(user, home string, extra []string, argv ...string) *exec.Cmd {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "CORRAL_HOME=" + filepath.Join(home, ".corral"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"), "TERM=dumb"}
	env = append(env, extra...)
	if user == "" {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		return cmd
	}
	return exec.Command("runuser", append([]string{"-u", user, "--", "/usr/bin/env", "-i"}, append(env, argv...)...)...)
}

// userDir makes dir/name for user ("" for this process's own).
func userDir(t *testing.T, dir, name, user string) string {
	d := filepath.Join(dir, name)
	mustMkdir(t, d)
	chownTree(t, d, user)
	return d
}

func chownTree(t *testing.T, dir, user string) {
	if user == "" {
		return
	}
	if out, err := exec.Command("chown", "-R", user, dir).CombinedOutput(); err != nil {
		t.Fatalf("chown %s: %v\n%s", dir, err, out)
	}
}

func mustMkdir(t *testing.T, d string) {
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

// calls reads the fake limactl's record: the descriptors of each call.
func calls(t *testing.T, limactl string) [][]string {
	b, _ := os.ReadFile(limactl + ".calls")
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if _, fds, ok := strings.Cut(line, ":"); ok {
			out = append(out, strings.Fields(fds))
		}
	}
	return out
}

// buildAsMakefile builds the package pkg into out as the Makefile builds the binary name: the
// inside helper without cgo.
func buildAsMakefile(name, out, pkg string) ([]byte, error) {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if name == "git-corral-sandbox" {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	return cmd.CombinedOutput()
}
