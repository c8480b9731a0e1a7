package session

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/git-corral/git-corral/internal/sshtest"
	"github.com/git-corral/git-corral/vm"
)

// editorClient runs an SSH client over conn as the test sshd's user and runs cmd.
func editorClient(srv *sshtest.Server, conn net.Conn, cmd string) (string, error) {
	key, err := os.ReadFile(srv.KeyFile)
	if err != nil {
		return "", err
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return "", err
	}
	cfg := &ssh.ClientConfig{User: srv.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey), Timeout: 20 * time.Second}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	c, chans, reqs, err := ssh.NewClientConn(conn, "corral-b-flow", cfg)
	if err != nil {
		return "", err
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		return "", err
	}
	out, err := s.Output(cmd)
	return string(out), err
}

// TestRelayOnlyAfterGuard: an editor's connection through ssh-proxy reaches the guest's sshd
// only after the guard check passed, and is audited as a launch and an exit; with a failing
// report the relay refuses, the refusal is audited, and the sshd sees no connection at all.
func TestRelayOnlyAfterGuard(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	for _, pass := range []bool{false, true} {
		report := reportFail
		if pass {
			report = reportPass
		}
		b := testBox(t, srv, startGuardDaemon(t, report, 0), nil)
		before := strings.Count(srv.Log(), "Accepted publickey")
		client, proxy := net.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- b.Relay(context.Background(), Streams{Stdin: proxy, Stdout: proxy})
			proxy.Close()
		}()
		out, cerr := editorClient(srv, client, "echo through the relay")
		client.Close()
		rerr := <-done
		rs := records(t, b)
		// The guard check's own connection is one accepted login; the editor's is a second.
		logins := strings.Count(srv.Log(), "Accepted publickey") - before
		if !pass {
			if !errors.Is(rerr, vm.ErrGuard) || cerr == nil {
				t.Fatalf("failing report: Relay = %v, client %v (%q); want a refusal and no session", rerr, cerr, out)
			}
			if events(rs) != "guard-failure" || logins != 1 {
				t.Errorf("failing report: audit %q, %d logins: want one guard-failure and only the check's login", events(rs), logins)
			}
			continue
		}
		if cerr != nil || out != "through the relay\n" || rerr != nil {
			t.Fatalf("passing report: client %v %q, Relay %v", cerr, out, rerr)
		}
		if events(rs) != "launch,exit" || strings.Join(rs[0].Argv, " ") != strings.Join(EditorArgv, " ") || logins != 2 {
			t.Errorf("passing report: audit %+v, %d logins: want launch (the editor connection) and exit", rs, logins)
		}
	}
}

// TestSSHConfigText: each box gets one Host entry whose ProxyCommand is ssh-proxy with the
// quoted binary path; a line break or quote in any value, or a box name that is not one, is
// refused rather than written (it would add a directive of its own).
func TestSSHConfigText(t *testing.T) {
	ep := vm.Endpoint{User: "u", IdentityFile: "/l/_config/user"}
	text, err := SSHConfigText([]SSHHost{{Box: "proj-abc123", Endpoint: ep, Exe: "/opt/my tools/git-corral%x", KnownHosts: "/c/boxes/proj-abc123.known_hosts"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Host corral-proj-abc123\n", "  ProxyCommand '/opt/my tools/git-corral%%x' --box proj-abc123 ssh-proxy\n",
		"  IdentityFile \"/l/_config/user\"\n", "  ForwardAgent no\n", "  StrictHostKeyChecking accept-new\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("ssh-config lacks %q:\n%s", want, text)
		}
	}
	for name, h := range map[string]SSHHost{
		"newline in the key":  {Box: "b-1", Endpoint: vm.Endpoint{User: "u", IdentityFile: "/k\nProxyCommand evil"}, Exe: "/x", KnownHosts: "/k"},
		"quote in the user":   {Box: "b-1", Endpoint: vm.Endpoint{User: `u" ProxyCommand evil`, IdentityFile: "/k"}, Exe: "/x", KnownHosts: "/k"},
		"newline in the exe":  {Box: "b-1", Endpoint: ep, Exe: "/x\nHost *", KnownHosts: "/k"},
		"box name with space": {Box: "b 1", Endpoint: ep, Exe: "/x", KnownHosts: "/k"},
		"empty known hosts":   {Box: "b-1", Endpoint: ep, Exe: "/x"},
	} {
		if _, err := SSHConfigText([]SSHHost{h}); err == nil {
			t.Errorf("%s: written", name)
		}
	}
}
