package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/git-corral/git-corral/internal/sshtest"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// editorClient runs an SSH client over conn as the test sshd's user, checking srv's host key.
func editorClient(srv *sshtest.Server, conn net.Conn) (*ssh.Client, error) {
	key, err := os.ReadFile(srv.KeyFile)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, err
	}
	cfg := &ssh.ClientConfig{User: srv.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey), Timeout: 20 * time.Second}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	c, chans, reqs, err := ssh.NewClientConn(conn, "corral-b-flow", cfg)
	if err != nil {
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}

// editorSession is what an editor does over the relay: it runs a command, then forwards to the
// guest port `ports` allows and to one it does not (ssh -L). out is the command's output and
// the two forwards' answers, "refused" for a forward the guest sshd refused.
func editorSession(srv *sshtest.Server, conn net.Conn, allowed, other string) (string, error) {
	client, err := editorClient(srv, conn)
	if err != nil {
		return "", err
	}
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		return "", err
	}
	out, err := s.Output("echo through the relay")
	if err != nil {
		return string(out), err
	}
	for _, addr := range []string{allowed, other} {
		fc, err := client.Dial("tcp", addr)
		if err != nil {
			out = append(out, "refused\n"...)
			continue
		}
		b, _ := io.ReadAll(fc)
		fc.Close()
		out = append(append(out, b...), '\n')
	}
	return string(out), nil
}

// answerOn listens on 127.0.0.1 and answers every connection with name.
func answerOn(t *testing.T, name string) string {
	return sshtest.Answer(t, "tcp", "127.0.0.1:0", name).Addr().String()
}

// TestRelayOnlyAfterGuard: an editor's connection through ssh-proxy reaches the guest's sshd
// only after the guard check passed, through a direct-tcpip channel of git corral's own
// connection, so the guest sshd sees it come from 127.0.0.1 and holds it to the rendered
// editor limits: ssh -L to the port `ports` allows works, to another port is refused. It is
// audited as a launch and an exit; with a failing report the relay refuses, the refusal is
// audited, and the guest sshd sees no connection at all. The product sshd (where git corral's
// own connection lands, from the gateway in a box) stands apart from the guest sshd the
// channel reaches, so an editor connection dialled straight to the product's address fails.
func TestRelayOnlyAfterGuard(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	allowed, other := answerOn(t, "allowed"), answerOn(t, "other")
	_, port, _ := net.SplitHostPort(allowed)
	n, _ := strconv.Atoi(port)
	conf, err := provision.SSHDConf(provision.Options{ForwardPorts: []int{n}})
	if err != nil {
		t.Fatal(err)
	}
	guest := sshtest.Start(t, sshtest.Options{User: srv.User, ClientKey: srv.Opts.ClientKey, Extra: conf})
	for _, pass := range []bool{false, true} {
		report := reportFail
		if pass {
			report = reportPass
		}
		b := testBox(t, srv, startGuardDaemon(t, report, 0), nil)
		b.guestSSHD = guest.Addr()
		before, guestBefore := strings.Count(srv.Log(), "Accepted publickey"), strings.Count(guest.Log(), "Accepted publickey")
		client, proxy := net.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- b.Relay(context.Background(), Streams{Stdin: proxy, Stdout: proxy})
			proxy.Close()
		}()
		out, cerr := editorSession(guest, client, allowed, other)
		client.Close()
		rerr := <-done
		rs := records(t, b)
		// The guard check's connection (which then carries the editor's) is one login at the
		// product sshd; the editor's is one at the guest sshd, from 127.0.0.1.
		logins := strings.Count(srv.Log(), "Accepted publickey") - before
		guestLogins := strings.Count(guest.Log(), "Accepted publickey") - guestBefore
		if !pass {
			if !errors.Is(rerr, vm.ErrGuard) || cerr == nil {
				t.Fatalf("failing report: Relay = %v, client %v (%q); want a refusal and no session", rerr, cerr, out)
			}
			if events(rs) != "guard-failure" || logins != 1 || guestLogins != 0 {
				t.Errorf("failing report: audit %q, %d+%d logins: want one guard-failure and only the check's login", events(rs), logins, guestLogins)
			}
			continue
		}
		if cerr != nil || out != "through the relay\nallowed\nrefused\n" || rerr != nil {
			t.Fatalf("passing report: client %v %q, Relay %v; want the command, the allowed forward, the other refused", cerr, out, rerr)
		}
		if !strings.Contains(guest.Log(), "Accepted publickey for "+srv.User+" from 127.0.0.1 ") {
			t.Errorf("the guest sshd did not see the editor come from 127.0.0.1:\n%s", guest.Log())
		}
		if events(rs) != "launch,exit" || strings.Join(rs[0].Argv, " ") != strings.Join(EditorArgv, " ") || logins != 1 || guestLogins != 1 {
			t.Errorf("passing report: audit %+v, %d+%d logins: want launch (the editor connection) and exit", rs, logins, guestLogins)
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

// TestEditorPorts: the guest sshd's editor limits get each `ports` entry's guest port, and a
// bad entry is refused, naming it, rather than rendered as "no forwards".
func TestEditorPorts(t *testing.T) {
	cfg := policy.Default()
	cfg.Ports = []string{"18080:8080", "18081:3000"}
	if got, err := editorPorts(cfg); err != nil || fmt.Sprint(got) != "[8080 3000]" {
		t.Errorf("editorPorts = %v, %v; want [8080 3000]", got, err)
	}
	cfg.Ports = []string{"18080:8080", "80:8081"}
	if _, err := editorPorts(cfg); err == nil || !strings.Contains(err.Error(), `"80:8081"`) {
		t.Errorf("editorPorts with a bad entry: %v; want a refusal naming it", err)
	}
}
