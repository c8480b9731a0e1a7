package sshtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HostAgent starts a real ssh-agent on a socket in a temp dir holding one fresh key with the
// given comment, and returns the socket and the key's line as ssh-add -l prints it. A missing
// OpenSSH client fails the test: CI installs it (scripts/setup.sh).
func HostAgent(t testing.TB, comment string) (sock, fingerprint string) {
	t.Helper()
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("needs %s (openssh-client): %v", tool, err)
		}
	}
	dir := t.TempDir()
	sock = filepath.Join(dir, "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Signal(syscall.SIGTERM); agent.Wait() })
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	key := filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	add := exec.Command("ssh-add", key)
	add.Env = []string{"SSH_AUTH_SOCK=" + sock}
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	list := exec.Command("ssh-add", "-l")
	list.Env = []string{"SSH_AUTH_SOCK=" + sock}
	out, err := list.Output()
	if err != nil || !strings.Contains(string(out), comment) {
		t.Fatalf("ssh-add -l: %v %s", err, out)
	}
	return sock, strings.TrimSpace(string(out))
}
