package session

// Clone-mode boxes: a box that mounts nothing of the host and holds its checkout on its own
// disk (clone.GuestCheckoutDir). Used by "git corral clone" and "git corral fetch" (OpenClone,
// then Guest), by start/run/shell in a clone directory (openCloneDir) and by start/run/shell in
// a checkout whose policy says source = "clone" (openCloneSource).

import (
	"context"
	"fmt"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// CloneRequest is a request for a box that mounts nothing of the host.
type CloneRequest struct {
	Request
	// Box is the box name, derived from HostDir.
	Box string
	// HostDir is the real host directory the box belongs to (a clone DIR or a checkout).
	HostDir string
	// Create allows creating the box (under Yes / NoCreate / Confirm) and starts its broker in
	// broker mode; without it (fetch) the box must exist and only the default configuration's
	// flow is used: nothing is sent to the box but commands that read from it.
	Create bool
	// Config is the configuration to use; nil loads the trusted layers for HostDir (Create) or
	// takes the defaults (fetch).
	Config *policy.Config
}

// OpenClone makes the clone-mode box of req run, provisioned with the guest scripts of its
// network mode, with the same preflight (audit start record), network-change rule
// (NetworkFor) and broker port rule as Open.
func OpenClone(ctx context.Context, req CloneRequest) (*Box, error) {
	if req.Yes && req.NoCreate {
		return nil, usageErrorf("--yes and --no-create exclude each other")
	}
	h, err := home.Resolve(req.Getenv)
	if err != nil {
		return nil, err
	}
	cfg := req.Config
	if cfg == nil && req.Create {
		// A clone DIR holds no checkout, so there is no repository file to read from it.
		if cfg, err = LoadConfig(ctx, req.Request, policy.LoadOptions{Home: h, TopLevel: req.HostDir, Box: req.Box}); err != nil {
			return nil, err
		}
		if err := checkCloneDirHide(h, req.HostDir, req.Box, cfg); err != nil { // clonehide.go
			return nil, err
		}
	} else if cfg == nil {
		cfg = policy.Default()
	}
	if err := preflight(ctx, req.Request, h, req.Box, req.HostDir, cfg); err != nil {
		return nil, err
	}
	m, err := Manager(req.Getenv)
	if err != nil {
		return nil, err
	}
	meta, _ := m.ReadMeta(req.Box)
	b := &Box{Manager: m, Name: req.Box, Dir: req.HostDir, req: req.Request}
	if b.Config, err = NetworkFor(req.Request, req.Box, meta, cfg); err != nil {
		return nil, err
	}
	if b.BrokerPort, err = brokerPort(b.Config, meta); err != nil {
		return nil, err
	}
	if b.Bundle, err = cloneBundle(b.Config, b.BrokerPort); err != nil {
		return nil, err
	}
	if len(b.Config.Provision) > 0 {
		req.notice("provision scripts are not run in a clone-mode box (they run from a mounted checkout); packages are installed")
	}
	if err := refuseCloneMounts(b.Config); err != nil { // extra.go
		return nil, err
	}
	if st, err := m.Inspect(req.Box); err == nil && (req.Config != nil || req.Create) {
		if err := b.checkHostKeys(meta, st); err != nil {
			return nil, err
		}
	}
	spec := b.spec(req.Request)
	spec.NoProjectMount, spec.Create = true, req.Create && !req.NoCreate
	// A clone box resumes the golden base of its recipe, as a mount-mode box does: one base
	// per network mode for the clone boxes of every repository (a checkout's box has its own:
	// its guard check also checks the git shadow).
	spec.Golden = b.Config.Golden && !req.NoGolden
	markSession(ctx, m, req.Box, b.Config, req.notice) // watch.go: clone, fetch and sessions hold the box
	if b.Status, err = m.Ensure(ctx, spec); err != nil {
		return nil, ensureError(err, req.Cmd, req.Create)
	}
	if req.Create && b.Config.Network == policy.NetworkBroker {
		if b.BrokerSecret, err = ensureBroker(ctx, m, req.Box, b.Config, b.BrokerPort, req.notice); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// cloneBundle renders a clone-mode box's guest scripts: base, network lockdown, packages and
// privilege drop for cfg's network mode, with no project directory (nothing is mounted), no
// git shadow (no host git metadata is in reach of the box) and no repository provision
// scripts (they run from a mounted checkout, which a clone-mode box does not have).
func cloneBundle(cfg *policy.Config, brokerPort int) (provision.Bundle, error) {
	fwd, err := editorPorts(cfg) // editor.go
	if err != nil {
		return provision.Bundle{}, err
	}
	b, err := provision.Render(provision.Options{Network: cfg.Network, User: vm.GuestUser(), BrokerPort: brokerPort, Packages: cfg.Packages, GitCredentialHelper: gitCredentialHelper(cfg),
		ForwardPorts: fwd, SSHAgent: cfg.SSHAgent})
	if err != nil {
		return provision.Bundle{}, hint.With(err, "the values above come from the configuration and the host user name")
	}
	return b, nil
}

// GuestBox is a running clone-mode box after the guard check: its Guest, the guest path of its
// checkout and the network mode it was created with.
type GuestBox struct {
	clone.Guest
	Dir     string
	Network policy.Network
	// Close ends the connection.
	Close func() error
}

// Guest connects to the running clone-mode box, runs the guard check (a refusal is audited),
// and returns it as a clone.Guest with its guest checkout directory. In broker mode the
// Guest's commands get the broker's proxy settings (through the SSH channel, never argv).
func (b *Box) Guest(ctx context.Context, hostDir string) (*GuestBox, error) {
	c, err := b.dialGuarded(ctx)
	if err != nil {
		return nil, err
	}
	g := b.vmGuest(c)
	dir, err := clone.GuestCheckoutDir(ctx, g, hostDir)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &GuestBox{Guest: g, Dir: dir, Network: b.Config.Network, Close: c.Close}, nil
}

// vmGuest is c as a clone.Guest, with the broker's proxy settings when b has a broker.
func (b *Box) vmGuest(c *vm.Client) *vm.Guest {
	g := &vm.Guest{C: c, Stderr: b.req.UI.Stderr}
	if b.BrokerSecret != nil {
		g.Env = b.proxyEnv()
	}
	return g
}

// dialGuarded connects to the running box and runs the guard check, as Run does, before
// anything is delivered into or read from the box. A refusal is recorded in the audit log.
func (b *Box) dialGuarded(ctx context.Context) (*vm.Client, error) {
	ep, err := b.endpoint()
	if err != nil {
		return nil, err
	}
	c, err := b.dial(ctx, ep, false)
	if err != nil {
		return nil, hint.With(err, "'git corral logs' shows what Lima said")
	}
	out, err := vm.CheckGuards(ctx, c, b.Config.Network, b.Bundle)
	if err != nil {
		c.Close()
		rec := AuditRecord(b)
		b.guardFailed(ctx, AuditLog(b.Manager.Home), rec, err)
		return nil, hint.With(err, "nothing was delivered or fetched; 'git corral stop' then 'git corral start' re-applies the guards at boot")
	}
	if out.Absent {
		b.req.notice("no guest guards are rendered for this box yet (full network, empty provision bundle): clone delivery runs without a guard check")
	}
	return c, nil
}

// AuditRecord is the audit record every event of a session in b starts from.
func AuditRecord(b *Box) audit.Record {
	return audit.Record{Box: b.Name, Project: b.Dir, Network: string(b.Config.Network), Profile: b.Config.Profile}
}

// guestDirOf asks the running box for its checkout directory of hostDir.
func (b *Box) guestDirOf(ctx context.Context, hostDir string) (string, error) {
	c, err := b.dialGuarded(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return clone.GuestCheckoutDir(ctx, b.vmGuest(c), hostDir)
}

// openCloneSource is Open for a checkout whose policy says source = "clone": it boots the
// checkout's box without any mount, delivers the checkout (prepareCloneSource) and returns the
// box with the guest checkout as its directory.
func openCloneSource(ctx context.Context, req Request, p *project.Project, cfg *policy.Config) (*Box, error) {
	b, err := OpenClone(ctx, CloneRequest{Request: req, Box: p.Box, HostDir: p.TopLevel, Create: true, Config: cfg})
	if err != nil {
		return nil, err
	}
	if b.Dir, err = b.prepareCloneSource(ctx, p); err != nil {
		return nil, err
	}
	return b, nil
}

// prepareCloneSource gives the running box the checkout p as committed at HEAD (plus, with
// clone_uncommitted, the current content of tracked files), never an untracked file, has the
// box fetch its submodules, and returns the guest checkout directory. A box that already has
// its checkout keeps it (the box's own work lives there; 'git corral fetch' brings it back), so
// nothing is delivered twice.
func (b *Box) prepareCloneSource(ctx context.Context, p *project.Project) (string, error) {
	c, err := b.dialGuarded(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	g := b.vmGuest(c)
	dir, err := clone.GuestCheckoutDir(ctx, g, p.TopLevel)
	if err != nil {
		return "", err
	}
	if _, code, err := c.Output(ctx, []string{"test", "-e", dir + "/.git"}); err != nil {
		return "", err
	} else if code == 0 {
		return dir, nil
	}
	if err := checkCloneHide(p.TopLevel, b.Config); err != nil { // hide.go
		return "", err
	}
	plan, err := clone.DeliverCheckout(ctx, g, p.TopLevel, b.Manager.Home.CloneStore(p.Box), dir, b.Config.CloneUncommitted, TransportsFor(b.Config.Network))
	if err != nil {
		return "", hint.With(fmt.Errorf("deliver %s into box %s: %w", p.TopLevel, p.Box, err), "nothing of the host is mounted in the box; fix the cause and run the command again")
	}
	what := "HEAD"
	if b.Config.CloneUncommitted {
		what = "HEAD and uncommitted changes to tracked files"
	}
	b.req.notice(fmt.Sprintf("delivered %s of %s into the box at %s (untracked files stay on the host)", what, visible.String(p.TopLevel), visible.String(dir)))
	return dir, FetchSubmodules(ctx, b.req.UI, g, dir, plan)
}

// TransportsFor is what a box's git may fetch submodules over in network mode n.
func TransportsFor(n policy.Network) []string {
	switch n {
	case policy.NetworkFull:
		return clone.TransportsFull
	case policy.NetworkBroker:
		return clone.TransportsBroker
	}
	return nil
}

// FetchSubmodules has the box's git fetch plan's submodules into the checkout at dir and
// reports the ones left out through ui.
func FetchSubmodules(ctx context.Context, ui UI, g clone.Guest, dir string, plan clone.SubmodulePlan) error {
	r := Request{UI: ui}
	for _, f := range plan.Skipped {
		r.warn(fmt.Sprintf("submodule not fetched: %s", f))
	}
	if err := clone.UpdateSubmodules(ctx, g, dir, plan); err != nil {
		return hint.With(err, "the checkout is in the box, its submodules are not complete; 'git corral shell' there to see why")
	}
	if n := len(plan.Fetch); n > 0 {
		r.notice(fmt.Sprintf("the box fetched %d submodule(s) into %s", n, visible.String(dir)))
	}
	return nil
}
