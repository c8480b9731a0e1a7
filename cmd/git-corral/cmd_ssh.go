package main

// Editor access through the guards: ssh-config writes an ssh_config(5) entry per box whose
// ProxyCommand is ssh-proxy, which opens the box like a session (guard check, audit) before it
// relays the connection (session.Relay); code opens VS Code Remote-SSH on one of them.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/session"
	"github.com/git-corral/git-corral/vm"
)

func defineSSHConfig(fs *pflag.FlagSet) runFunc {
	install := fs.Bool("install", false, "write the entries to $CORRAL_HOME/ssh_config and print the Include line")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("ssh-config", "ssh-config takes no arguments")
		}
		text, err := a.sshConfigText()
		if err != nil {
			return err
		}
		if !*install {
			_, err := fmt.Fprint(a.stdout, text)
			return err
		}
		path, err := a.installSSHConfig(text)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "wrote %s; include it from ~/.ssh/config with this line at its top:\nInclude %s\n", path, path)
		return nil
	}
}

// sshConfigText renders the entries of every box Lima has an ssh.config for.
func (a *app) sshConfigText() (string, error) {
	m, err := a.manager()
	if err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	boxes, err := m.Boxes()
	if err != nil {
		return "", err
	}
	var hosts []session.SSHHost
	for _, st := range boxes {
		if _, err := m.ReadMeta(st.Name); err != nil {
			continue // not a box of git corral's
		}
		ep, err := vm.EndpointFromSSHConfig(st.SSHConfig, "lima-"+st.Name)
		if err != nil {
			continue // never booted: Lima has written no ssh.config yet
		}
		hosts = append(hosts, session.SSHHost{Box: st.Name, Endpoint: ep, Exe: exe, KnownHosts: m.Home.SSHKnownHosts(st.Name)})
	}
	return session.SSHConfigText(hosts)
}

// installSSHConfig writes text to $CORRAL_HOME/ssh_config (0600, atomically).
func (a *app) installSSHConfig(text string) (string, error) {
	m, err := a.manager()
	if err != nil {
		return "", err
	}
	path := m.Home.SSHConfig()
	if err := m.Home.MkdirAll(m.Home.Dir); err != nil {
		return "", err
	}
	return path, atomicfile.Write(path, []byte(text), 0o600)
}

func defineSSHProxy(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 || a.box == "" {
			return usageErrorf("ssh-proxy", "ssh-proxy takes no arguments and needs --box BOX (ssh runs it from ssh-config's ProxyCommand)")
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		b, err := a.openNamedBox(ctx, box)
		if err != nil {
			return err
		}
		return b.Relay(ctx, a.streams())
	}
}

// openNamedBox opens the existing box called box for an editor's connection, booting it when
// it is stopped but never creating it; its project (or clone directory) comes from its
// metadata, and must still be the project that names this box.
func (a *app) openNamedBox(ctx context.Context, box string) (*session.Box, error) {
	m, err := a.manager()
	if err != nil {
		return nil, err
	}
	meta, err := m.ReadMeta(box)
	if err != nil || meta.Project == "" {
		return nil, withHint(fmt.Errorf("box %s is not one of git corral's boxes here", box), "'git corral list' shows the boxes; 'git corral ssh-config' writes their entries")
	}
	ui := a.ui()
	ui.Stdout = os.Stderr // stdout carries the SSH stream only
	req := session.Request{Cmd: "ssh-proxy", Dir: meta.Project, Getenv: a.getenv, NoCreate: true, UI: ui}
	if meta.NoProjectMount {
		return session.OpenClone(ctx, session.CloneRequest{Request: req, Box: box, HostDir: meta.Project})
	}
	b, err := session.Open(ctx, req)
	if err == nil && b.Name != box {
		return nil, fmt.Errorf("box %s was made for %s, which now belongs to box %s", box, meta.Project, b.Name)
	}
	return b, err
}

func defineCode(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("code", "code takes no arguments")
		}
		p, err := a.project(ctx)
		if err != nil {
			return err
		}
		code, err := exec.LookPath("code")
		if err != nil {
			return withHint(errors.New("VS Code's 'code' command is not on PATH"), "install VS Code and its Remote - SSH extension, or connect any editor with 'git corral ssh-config'")
		}
		text, err := a.sshConfigText()
		if err != nil {
			return err
		}
		path, err := a.installSSHConfig(text)
		if err != nil {
			return err
		}
		a.notice(fmt.Sprintf("VS Code connects through ~/.ssh/config: it must hold 'Include %s' for host corral-%s", path, p.Box))
		cmd := exec.CommandContext(ctx, code, "--remote", "ssh-remote+corral-"+p.Box, p.TopLevel)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
		return cmd.Run()
	}
}
