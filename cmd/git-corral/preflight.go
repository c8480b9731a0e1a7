package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
)

// sessionPreflight returns the checks a session command (start, run, shell) makes before any
// box is looked for or booted, so that a session that must be refused costs no boot:
//   - with ssh_agent, the host has an agent to forward (SSH_AUTH_SOCK is set);
//   - the environment assembles (env_from_host and git_tokens fail closed, naming the unset
//     host variable; no value is kept);
//   - the audit log takes a start record. A log that cannot be written (a full disk, a
//     read-only or foreign-owned logs directory) refuses the session: nothing runs unaudited.
func (a *app) sessionPreflight(cmd string, names []string) func(context.Context, string, string, *policy.Config) error {
	return func(ctx context.Context, box, dir string, cfg *policy.Config) error {
		e, err := assembleEnv(cfg, names)
		if err != nil {
			return err
		}
		if _, err := a.agentSocketFor(cfg); err != nil {
			return err
		}
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return err
		}
		rec := audit.Record{Event: audit.EventStart, Box: box, Project: dir, Network: string(cfg.Network),
			Profile: cfg.Profile, EnvNames: e.Names(), SSHAgent: cfg.SSHAgent, Detail: "git corral " + cmd}
		if err := a.auditLog(h).Append(ctx, rec); err != nil {
			return withHint(fmt.Errorf("refusing to start unaudited: %w", err),
				"free space for (or fix the permissions of) "+h.Logs()+", then start again; nothing was booted or run")
		}
		return nil
	}
}

// agentSocketFor returns the host agent's socket to forward when cfg sets ssh_agent, or "".
// ssh_agent without SSH_AUTH_SOCK is an error: the user asked for an agent there is none of.
func (a *app) agentSocketFor(cfg *policy.Config) (string, error) {
	if !cfg.SSHAgent {
		return "", nil
	}
	sock := a.getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return "", withHint(errors.New("ssh_agent is set but SSH_AUTH_SOCK is not: there is no host agent to forward"),
			"start an agent ('eval \"$(ssh-agent)\"' and ssh-add), or remove ssh_agent from the trusted configuration")
	}
	return sock, nil
}

// agentSocket is agentSocketFor for a session, printing the one-line warning when the agent
// is forwarded.
func (a *app) agentSocket(s *boxSession) (string, error) {
	sock, err := a.agentSocketFor(s.cfg)
	if sock != "" {
		fmt.Fprintf(a.stderr, "corral: warning: ssh_agent: your SSH agent is forwarded into box %s; the box can sign with your keys while this session runs\n", s.box)
	}
	return sock, err
}
