package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// guestSide is what a box's guest gets: the git shadow plan and the provision bundle.
type guestSide struct {
	plan   *gitshadow.Plan
	bundle provision.Bundle
}

// renderGuest refuses unapproved provision scripts, plans the git shadow and renders every guest
// script of the box, in order.
func renderGuest(ctx context.Context, p *project.Project, h home.Home, box string, cfg *policy.Config, brokerPort int) (*guestSide, error) {
	repo, err := provision.CheckApproved(ctx, h, box, provision.RequestFromConfig(p.TopLevel, cfg))
	if err != nil {
		hint := "run 'git corral review', read what the scripts do, then 'git corral review --approve'"
		if !errors.Is(err, provision.ErrNotApproved) {
			hint = "fix .corral.toml or the script named above"
		}
		return nil, withHint(err, hint)
	}
	g := &guestSide{}
	script := ""
	if cfg.ProtectGitMetadata {
		if g.plan, err = gitshadow.Discover(ctx, p); err != nil {
			return nil, fmt.Errorf("plan the git shadow: %w", err)
		}
		if script, err = g.plan.GuestScript(); err != nil {
			return nil, fmt.Errorf("render the git shadow: %w", err)
		}
		if script, err = shadowScriptWithExpectations(g.plan, script); err != nil {
			return nil, fmt.Errorf("render the git shadow: %w", err)
		}
	}
	g.bundle, err = provision.Render(provision.Options{
		Network: cfg.Network, User: vm.GuestUser(), ProjectDir: p.TopLevel, BrokerPort: brokerPort,
		GitShadowScript: script, Packages: cfg.Packages, Repo: repo, GitCredentialHelper: len(cfg.GitTokens) > 0,
	})
	if err != nil {
		return nil, withHint(err, "the values above come from the repository, its config and the host user name")
	}
	return g, nil
}

// brokerSecretFile is the 0600 file holding a box's proxy secret, created once.
func brokerSecretFile(h home.Home, box string) (string, []byte, error) {
	path := h.BoxMeta(box) + ".broker-secret"
	if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
		return path, b, nil
	}
	if err := h.MkdirAll(h.Dir + "/boxes"); err != nil {
		return "", nil, err
	}
	secret := []byte(broker.NewSecret())
	if err := atomicfile.Write(path, secret, 0o600); err != nil {
		return "", nil, err
	}
	return path, secret, nil
}

// ensureBroker makes the box's broker child run on its fixed port, restarting it when it died,
// and records its PID. It returns the secret the guest's proxy settings carry.
func (a *app) ensureBroker(ctx context.Context, m *vm.Manager, box string, cfg *policy.Config, port int) ([]byte, error) {
	h := m.Home
	secretFile, secret, err := brokerSecretFile(h, box)
	if err != nil {
		return nil, err
	}
	meta, err := m.ReadMeta(box)
	if err != nil {
		return nil, err
	}
	if broker.ChildRunning(meta.BrokerPID, box) {
		return secret, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find git-corral to start the broker: %w", err)
	}
	if err := h.MkdirAll(h.Logs()); err != nil {
		return nil, err
	}
	pid, err := broker.StartChild(ctx, broker.ChildOptions{
		Exe: exe, Box: box, Port: port, Allow: cfg.Egress, SecretFile: secretFile,
		EgressLog: h.EgressLog(box), DiagLog: h.BrokerLog(box),
	})
	if err != nil {
		return nil, withHint(err, "the broker decides every connection of a box in broker mode; without it the session does not start")
	}
	meta.BrokerPID = pid
	if err := m.WriteMeta(meta); err != nil {
		broker.StopChild(pid, box)
		return nil, err
	}
	a.notice(fmt.Sprintf("broker for box %s listens on 127.0.0.1:%d (pid %d)", box, port, pid))
	return secret, nil
}

// proxyEnv is what a broker-mode session is given so that its tools use the broker.
func proxyEnv(secret []byte, port int) map[string]string {
	url := fmt.Sprintf("http://corral:%s@%s:%d", secret, provision.Gateway, port)
	return map[string]string{
		"http_proxy": url, "https_proxy": url, "HTTP_PROXY": url, "HTTPS_PROXY": url,
		"no_proxy": "localhost,127.0.0.1,::1", "NO_PROXY": "localhost,127.0.0.1,::1",
	}
}
