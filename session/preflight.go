package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/boxenv"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// preflight is what a session checks before any box is looked for or booted, so that a
// session that must be refused costs no boot:
//   - with ssh_agent, the host has an agent to forward (SSH_AUTH_SOCK is set);
//   - the environment assembles (env_from_host and git_tokens fail closed, naming the unset
//     host variable; no value is kept);
//   - the audit log takes a start record. A log that cannot be written (a full disk, a
//     read-only or foreign-owned logs directory) refuses the session: nothing runs unaudited.
func preflight(ctx context.Context, req Request, h home.Home, box, dir string, cfg *policy.Config) error {
	e, err := AssembleEnv(cfg, req.Env)
	if err != nil {
		return err
	}
	if _, err := agentSocketFor(req, cfg); err != nil {
		return err
	}
	rec := audit.Record{Event: audit.EventStart, Box: box, Project: dir, Network: string(sessionNetwork(h, box, cfg)),
		Profile: cfg.Profile, EnvNames: e.Names(), SSHAgent: cfg.SSHAgent, Detail: "git corral " + req.Cmd}
	digest, err := storeSnapshot(h, cfg)
	if err == nil {
		rec.PolicyDigest = digest
		err = AuditLog(h).Append(ctx, rec)
	}
	if err != nil {
		return hint.With(fmt.Errorf("refusing to start unaudited: %w", err),
			"free space for (or fix the permissions of) "+h.Logs()+", then start again; nothing was booted or run")
	}
	return nil
}

// AuditLog is the sessions log of h.
func AuditLog(h home.Home) *audit.Log {
	return &audit.Log{Path: h.SessionsLog()}
}

// AssembleEnv builds the session environment from cfg's trusted layers and the --env names.
// A host variable an API route holds, and any value holding a route's secret, is left out
// (apiroutes.go); in broker mode a route whose secret is unset fails it.
func AssembleEnv(cfg *policy.Config, names []string) (boxenv.Env, error) {
	for _, n := range names {
		if err := boxenv.CheckName(n); err != nil {
			return boxenv.Env{}, usageErrorf("--env: %v", err)
		}
	}
	plan, err := planRoutes(cfg, os.LookupEnv)
	if err != nil && cfg.Network == policy.NetworkBroker {
		return boxenv.Env{}, err
	}
	src := boxenv.Sources{
		ForwardEnv: append(append([]string{}, cfg.ForwardEnv...), names...), EnvFromHost: cfg.EnvFromHost,
		Env: cfg.Env, EnvFile: cfg.EnvFile, GitTokens: cfg.GitTokens, NoPassthrough: cfg.NoEnvPassthrough,
	}
	withheld := plan.withholdSources(&src)
	e, err := boxenv.Assemble(src, os.LookupEnv)
	if err != nil {
		return boxenv.Env{}, hint.With(err, "set the host variable, or change env_from_host / git_tokens in the trusted configuration")
	}
	e.Dropped = append(e.Dropped, withheld...)
	plan.scrub(&e)
	return e, nil
}

// agentSocketFor returns the host agent's socket to forward when cfg sets ssh_agent, or "".
// ssh_agent without SSH_AUTH_SOCK is an error: the user asked for an agent there is none of.
func agentSocketFor(req Request, cfg *policy.Config) (string, error) {
	if !cfg.SSHAgent {
		return "", nil
	}
	sock := req.getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return "", hint.With(errors.New("ssh_agent is set but SSH_AUTH_SOCK is not: there is no host agent to forward"),
			"start an agent ('eval \"$(ssh-agent)\"' and ssh-add), or remove ssh_agent from the trusted configuration")
	}
	return sock, nil
}

// env assembles the session's variables from the trusted layers (boxenv), with each --env
// NAME and each of the session agent's auth variables (agentAuth) forwarded too, plus the
// broker's proxy settings in broker mode. Values travel only
// inside the SSH channel; the names are returned for the audit log, and hostValues says
// whether any value besides the broker's proxy settings came from the host's configuration.
func (b *Box) env(agentAuth ...string) (vars map[string]string, envNames []string, hostValues bool, err error) {
	e, err := AssembleEnv(b.Config, append(append([]string{}, b.req.Env...), agentAuth...))
	if err != nil {
		return nil, nil, false, err
	}
	for _, d := range e.Dropped {
		b.req.notice("not passed into the box: " + d)
	}
	hostValues = len(e.Values) > 0
	id, idHost, missing, err := b.gitIdentity(context.TODO())
	if err != nil {
		return nil, nil, false, err
	}
	if len(missing) > 0 {
		b.noticeOnce(fmt.Sprintf("git_identity = \"host\": the host's git has no %s; commits in the box carry the box's own", strings.Join(missing, " or ")))
	}
	for k, v := range id {
		e.Values[k] = v
	}
	hostValues = hostValues || idHost && len(id) > 0
	lg, err := b.login()
	if err != nil {
		return nil, nil, false, err
	}
	if b.BrokerSecret != nil {
		for k, v := range routeBoxEnv(b.Config) {
			if boxenv.CheckName(k) == nil {
				e.Values[k] = v
			}
		}
		if lg != nil {
			for k, v := range lg.boxEnv(b.Config) {
				e.Values[k] = v
			}
		}
		for k, v := range b.proxyEnv() {
			e.Values[k] = v
		}
		gitRouteEnv(b.Config, e.Values)
	} else if lg != nil {
		b.req.notice(fmt.Sprintf("host-held login %q of %s: not offered in network %q (it goes through the broker); nothing of it reaches the box", lg.name, lg.agent, b.Config.Network))
	}
	if b.BrokerSecret == nil && len(b.Config.APIBrokers) > 0 {
		b.req.notice(fmt.Sprintf("api_brokers %s: not offered in network %q (routes go through the broker); their host variables are still not passed into the box",
			strings.Join(b.Config.APIBrokers, ", "), b.Config.Network))
	}
	return e.Values, e.Names(), hostValues, nil
}

// agentSocket is agentSocketFor for a session in b, with the one-line warning when the agent is
// forwarded.
func (b *Box) agentSocket() (string, error) {
	sock, err := agentSocketFor(b.req, b.Config)
	if sock != "" {
		b.req.warn(fmt.Sprintf("ssh_agent: your SSH agent is forwarded into box %s; the box can sign with your keys while this session runs", b.Name))
	}
	return sock, err
}

// storeSnapshot stores the snapshot of cfg's load (LoadConfig) under its digest, once: the
// name binds the content, so an existing file is kept. A configuration not from LoadConfig
// has none ("").
func storeSnapshot(h home.Home, cfg *policy.Config) (string, error) {
	v, ok := loaded.Load(cfg)
	if !ok {
		return "", nil
	}
	snap := v.(policy.Snapshot)
	p := h.PolicySnapshot(snap.Digest)
	if p == "" {
		return "", fmt.Errorf("policy snapshot: malformed digest %q", snap.Digest)
	}
	if _, err := os.Stat(p); err == nil {
		return snap.Digest, nil
	}
	if err := h.MkdirAll(h.PolicySnapshots()); err != nil {
		return "", fmt.Errorf("store the session's policy: %w", err)
	}
	raw, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		return "", fmt.Errorf("store the session's policy: %w", err)
	}
	if err := atomicfile.Write(p, append(raw, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("store the session's policy: %w", err)
	}
	return snap.Digest, nil
}

// sessionNetwork is the network mode the session will run in, for its start record
// (boxNetwork): an existing box's recorded mode as NetworkFor keeps it, a new box's cfg's; a
// session NetworkFor refuses after this record is recorded with cfg's.
func sessionNetwork(h home.Home, box string, cfg *policy.Config) policy.Network {
	meta, err := (&vm.Manager{Home: h}).ReadMeta(box)
	if err != nil {
		return cfg.Network
	}
	n, _ := boxNetwork(meta, cfg)
	return n
}
