package provision

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// TestSSHDConfRefusesBadPorts: a guest port outside 1..65535 is refused, not rendered.
func TestSSHDConfRefusesBadPorts(t *testing.T) {
	for _, p := range []int{0, -1, 65536, 1 << 20} {
		if _, err := SSHDConf(Options{ForwardPorts: []int{8099, p}}); err == nil || !strings.Contains(err.Error(), fmt.Sprint(p)) {
			t.Errorf("port %d: %v, want a refusal naming it", p, err)
		}
	}
	text, err := SSHDConf(Options{ForwardPorts: []int{8099, 8099}})
	if err != nil || !strings.Contains(text, "\tPermitOpen 127.0.0.1:8099 localhost:8099 [::1]:8099\n") {
		t.Errorf("SSHDConf = %v\n%s", err, text)
	}
	for agentOn, want := range map[bool]string{false: "\tAllowAgentForwarding no\n", true: "\tAllowAgentForwarding yes\n"} {
		if text, err := SSHDConf(Options{SSHAgent: agentOn}); err != nil || !strings.Contains(text, want) || !strings.Contains(text, "\tAllowTcpForwarding no\n") {
			t.Errorf("ssh_agent %v, no ports: %v, want %q and no TCP forwarding:\n%s", agentOn, err, want, text)
		}
	}
}

// echoListener accepts on 127.0.0.1 (or a unix socket) and answers every connection with name.
func echoListener(t *testing.T, network, addr, name string) net.Listener {
	return sshtest.Answer(t, network, addr, name)
}

// sshFrom logs in to srv from the local address src (127.0.0.1: an editor's path; 127.0.0.2:
// git corral's own connection, which comes from the gateway in a box).
func sshFrom(t *testing.T, srv *sshtest.Server, src string) *ssh.Client {
	t.Helper()
	key, err := os.ReadFile(srv.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	conn, err := d.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ClientConfig{User: srv.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey), Timeout: 10 * time.Second}
	c, chans, reqs, err := ssh.NewClientConn(conn, srv.Addr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := ssh.NewClient(c, chans, reqs)
	t.Cleanup(func() { client.Close() })
	return client
}

// readVia opens a channel to addr over c and returns what the far end wrote.
func readVia(c *ssh.Client, network, addr string) (string, error) {
	conn, err := c.Dial(network, addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	b, err := io.ReadAll(conn)
	return string(b), err
}

// remoteForward asks for an ssh -R listener and reports whether sshd granted it.
func remoteForward(c *ssh.Client) error {
	l, err := c.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		l.Close()
	}
	return err
}

// agentForward asks for agent forwarding on a session, as ssh -A does.
func agentForward(c *ssh.Client) error {
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	return agent.RequestAgentForwarding(s)
}

// TestSSHDConfEditorForwards runs a real sshd with the rendered configuration. From 127.0.0.1
// (an editor's connection through ssh-proxy) an ssh -L forward to a guest port `ports` names
// works and to any other port is refused, and an ssh -R forward, a unix-socket forward and
// agent forwarding (no ssh_agent) are refused; with no `ports`, every TCP forward is refused.
// From 127.0.0.2 (the control: git corral's own connection) the same probes all work, the guard
// socket channel among them.
func TestSSHDConfEditorForwards(t *testing.T) {
	allowed := echoListener(t, "tcp", "127.0.0.1:0", "allowed")
	other := echoListener(t, "tcp", "127.0.0.1:0", "other")
	sockDir, err := os.MkdirTemp("", "corral-sshdconf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	os.Chmod(sockDir, 0o755)
	sock := filepath.Join(sockDir, "guard.sock")
	echoListener(t, "unix", sock, "guard")
	os.Chmod(sock, 0o777)
	allowedPort := allowed.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name  string
		ports []int
	}{{"ports allows one", []int{allowedPort}}, {"no ports", nil}} {
		conf, err := SSHDConf(Options{ForwardPorts: tc.ports})
		if err != nil {
			t.Fatal(err)
		}
		srv := sshtest.Start(t, sshtest.Options{Extra: conf})
		editor, product := sshFrom(t, srv, "127.0.0.1"), sshFrom(t, srv, "127.0.0.2")
		probes := []struct {
			name string
			run  func(c *ssh.Client) error
		}{
			{"-L to the allowed port", func(c *ssh.Client) error { return wantRead(c, "tcp", allowed.Addr().String(), "allowed") }},
			{"-L to the allowed port as localhost", func(c *ssh.Client) error {
				return wantRead(c, "tcp", fmt.Sprintf("localhost:%d", allowedPort), "allowed")
			}},
			{"-L to another port", func(c *ssh.Client) error { return wantRead(c, "tcp", other.Addr().String(), "other") }},
			{"-R", remoteForward},
			{"unix-socket forward (the guard socket)", func(c *ssh.Client) error { return wantRead(c, "unix", sock, "guard") }},
			{"agent forwarding without ssh_agent", agentForward},
		}
		for i, p := range probes {
			if err := p.run(product); err != nil {
				t.Errorf("%s: control from 127.0.0.2: %s failed: %v", tc.name, p.name, err)
			}
			err := p.run(editor)
			mayWork := i < 2 && tc.ports != nil
			if mayWork && err != nil {
				t.Errorf("%s: from 127.0.0.1: %s refused: %v", tc.name, p.name, err)
			}
			if !mayWork && err == nil {
				t.Errorf("%s: from 127.0.0.1: %s worked; want it refused", tc.name, p.name)
			}
		}
	}
}

// wantRead is nil when a channel to addr over c opens and carries want.
func wantRead(c *ssh.Client, network, addr, want string) error {
	got, err := readVia(c, network, addr)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("read %q through the channel, want %q", got, want)
	}
	return nil
}
