package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/trace"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// SourceClone is the policy value of `source` that selects clone mode for a checkout.
const SourceClone = "clone"

// Open finds the box of the checkout (or clone directory) at req.Dir and makes it run, creating
// it when the request allows, with every guard of its configuration in place. The steps, in
// order, are the package's flow (doc.go).
func Open(ctx context.Context, req Request) (*Box, error) {
	if req.Yes && req.NoCreate {
		return nil, usageErrorf("--yes and --no-create exclude each other")
	}
	if b, ok, err := openCloneDir(ctx, req); ok || err != nil {
		return b, err
	}
	// The guard daemon's report is asked for the box git will most likely name while git runs
	// (guessBox), and kept only if git names that box.
	h, herr := home.Resolve(req.Getenv)
	var pf *guardPrefetch
	guess := ""
	if herr == nil {
		if guess = guessBox(req.Dir); guess != "" {
			pf = prefetchGuard(ctx, &req, h, guess)
		}
	}
	done := trace.Step("project")
	p, err := project.Find(ctx, req.Dir)
	done()
	if err == nil {
		err = herr
	}
	if err != nil {
		pf.drop()
		return nil, err
	}
	if p.Box != guess {
		pf.drop()
		pf = prefetchGuard(ctx, &req, h, p.Box)
	}
	done = trace.Step("config")
	cfg, err := LoadConfig(ctx, req, policy.LoadOptions{Home: h, TopLevel: p.TopLevel, Box: p.Box})
	done()
	if err != nil {
		return nil, err
	}
	id := readIdentity(ctx, cfg.GitIdentity, p.TopLevel) // its git process overlaps what follows
	if err := checkImage(ctx, h, req, policy.LoadOptions{Home: h, TopLevel: p.TopLevel, Box: p.Box}, cfg); err != nil {
		return nil, err
	}
	if err := renameBox(h, p, cfg, &pf); err != nil { // name, image: lifecycle.go
		return nil, err
	}
	if _, _, _, err := id.result(); err != nil { // before any boot
		return nil, err
	}
	// What the box may mount of the host, refused before anything is recorded, looked for or
	// booted; the previews run the same function (preview.go).
	extra, err := CheckMounts(h, p, cfg, req.Getenv)
	if err != nil {
		return nil, err
	}
	if cfg.Source == SourceClone { // clone.go: no mount, HEAD + tracked changes delivered
		return openCloneSource(ctx, req, p, cfg)
	}
	done = trace.Step("preflight")
	err = preflight(ctx, req, h, p.Box, p.TopLevel, cfg)
	done()
	if err != nil {
		return nil, err
	}
	m, err := Manager(req.Getenv)
	if err != nil {
		return nil, err
	}
	b := &Box{Manager: m, Name: p.Box, Dir: p.TopLevel, Project: p, req: req, prefetch: pf, identity: id}
	meta, _ := m.ReadMeta(p.Box)
	if b.Config, err = NetworkFor(req, p.Box, meta, cfg); err != nil {
		return nil, err
	}
	if b.BrokerPort, err = brokerPort(b.Config, meta); err != nil {
		return nil, err
	}
	if err := b.renderGuest(ctx); err != nil {
		return nil, err
	}
	if err := b.openAgents(ctx); err != nil { // agentbox.go: store and state mounts, first-use install
		return nil, err
	}
	drift := provision.ScriptsDrift(meta.GuestScripts, b.Bundle.ProductScripts())
	if err := b.prepareCover(meta, drift); err != nil { // hide.go: hide and box_dirs
		return nil, err
	}
	if d := drift; len(d) > 0 {
		// git_tokens or packages added after creation, or another git corral: what the box
		// runs at boot is what it was made with.
		req.notice(fmt.Sprintf("box %s was made with other guest scripts than the configuration renders now (%s): "+
			"they take effect in a new box: 'git corral delete --yes', then start again", p.Box, strings.Join(d, ", ")))
	}
	done = trace.Step("inspect")
	st, err := m.Inspect(p.Box)
	done()
	if err == nil && st.Status != "Running" && b.Plan != nil {
		// Before the box can run, record the git metadata it must not change.
		if err := SnapshotBeforeBoot(ctx, m.Home, p.Box, b.Plan); err != nil {
			return nil, err
		}
	}
	if err := b.checkHostKeys(meta, st); err != nil { // extra.go: stale box, ports in use
		return nil, err
	}
	spec := b.spec(req)
	spec.Golden, spec.ExtraMounts = b.Config.Golden && !req.NoGolden, extra
	done = trace.Step("before session (snapshot, idle stop)")
	BeforeSession(ctx, m, p.Box, b.Config, req.notice)
	done()
	if err == nil && st.Status != "Running" {
		b.early = b.dialEarly(ctx, spec.Progress) // connection.go
	}
	done = trace.Step("ensure")
	b.Status, err = m.Ensure(ctx, spec)
	done()
	if err != nil {
		b.early.drop()
		return nil, ensureError(err, req.Cmd, true)
	}
	if b.Config.Network == policy.NetworkBroker {
		if b.BrokerSecret, err = ensureBroker(ctx, m, p.Box, b.Config, b.BrokerPort, req.notice); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// spec is the vm.BoxSpec of b for req.
func (b *Box) spec(req Request) vm.BoxSpec {
	spec := vm.BoxSpec{
		Box: b.Name, ProjectDir: b.Dir, Config: b.Config, Bundle: b.Bundle, Create: !req.NoCreate, BrokerPort: b.BrokerPort, Agents: b.Agents,
		Progress: req.UI.Progress, Notice: req.notice, GitMounts: GitMounts(b.Project),
	}
	if !req.Yes && req.UI.Confirm != nil {
		box, dir, confirm := b.Name, b.Dir, req.UI.Confirm
		spec.Confirm = func() (bool, error) { return confirm(box, dir) }
	}
	return spec
}

// LoadConfig loads the effective configuration for opts with req.Network as the flag layer.
func LoadConfig(ctx context.Context, req Request, opts policy.LoadOptions) (*policy.Config, error) {
	if err := AddNetworkFlag(&opts, req.Network); err != nil {
		return nil, err
	}
	withAgentHosts(&opts)
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return nil, err
	}
	snap, err := eff.Snapshot()
	if err != nil {
		return nil, err
	}
	loaded.Store(eff.Config, snap)
	return eff.Config, nil
}

// loaded maps each configuration LoadConfig returned to its snapshot, which preflight stores
// and names in the session's start record.
var loaded sync.Map

// AddNetworkFlag adds --network to opts as the flag layer, refusing an unknown mode.
func AddNetworkFlag(opts *policy.LoadOptions, network string) error {
	if network == "" {
		return nil
	}
	switch policy.Network(network) {
	case policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline:
	default:
		return usageErrorf("--network %q is not full, broker or offline", network)
	}
	opts.Flags = append(opts.Flags, policy.Flag{Key: "network", Value: network})
	return nil
}

// Manager finds limactl and returns the box manager for $CORRAL_HOME, refusing root with the fix.
func Manager(getenv func(string) string) (*vm.Manager, error) {
	h, err := home.Resolve(getenv)
	if err != nil {
		return nil, err
	}
	limactl, err := vm.FindLimactl(getenv)
	if err != nil {
		return nil, hint.With(err, "run 'make lima' (or scripts/setup.sh as root); 'git corral doctor' checks every prerequisite")
	}
	m, err := vm.NewManager(limactl, h)
	if errors.Is(err, vm.ErrRoot) {
		return nil, hint.With(err, "run git corral as a normal user, e.g. 'runuser -u USER -- git corral …' (the project must belong to that user)")
	}
	return m, err
}

// networkRank orders the modes from loosest to strictest.
var networkRank = map[policy.Network]int{policy.NetworkFull: 0, policy.NetworkBroker: 1, policy.NetworkOffline: 2}

// NetworkFor settles the network mode a session in box gets, the one rule for every source: an
// existing box keeps the mode it was created with (its guards are rendered into it at
// creation). A configuration asking for a stricter mode than the box has is refused (the box
// had more access than asked: a box that ran in full mode had root); one asking for a looser
// mode keeps the box's stricter mode, with a notice. A box with no recorded mode takes cfg's.
// A full box meets broker only as the built-in default (nothing named a mode) when it was made
// while full was the default: it keeps full, with a notice every session that says how to
// choose (issue #34: new boxes default to broker, existing ones keep theirs).
func NetworkFor(req Request, box string, meta vm.Meta, cfg *policy.Config) (*policy.Config, error) {
	have := policy.Network(meta.Network)
	n, refused := boxNetwork(meta, cfg)
	if n == cfg.Network && !refused {
		return cfg, nil
	}
	if kept := KeptDefaultNetwork(meta, cfg); kept != cfg {
		if req.Cmd != "fetch" {
			req.notice(fmt.Sprintf("box %s keeps network \"full\", the default when it was made; new boxes now default to \"broker\" "+
				"(only the hosts of egress_presets and egress). To keep full without this notice, write network = \"full\" in $CORRAL_HOME/projects/%s.toml; "+
				"to switch, write network = \"broker\" there, then 'git corral delete --yes' and start again (work kept only in the box is lost)", box, box))
		}
		return kept, nil
	}
	if refused {
		return nil, hint.With(fmt.Errorf("box %s was created with network %q, the configuration now says %q", box, have, cfg.Network),
			"delete it ('git corral delete --yes'; work kept only in the box is lost) and run the command again to get a box with the new mode")
	}
	if req.Network != "" || req.Cmd != "fetch" {
		req.notice(fmt.Sprintf("box %s keeps network %q, stricter than the %q the configuration asks for; 'git corral delete --yes' and start again for a new box", box, have, cfg.Network))
	}
	c := *cfg
	c.Network = have
	return &c, nil
}

// boxNetwork is NetworkFor's rule without its notices: the mode a session of the box recorded
// in meta runs in under cfg, or refused when cfg asks for a stricter mode than the box has.
func boxNetwork(meta vm.Meta, cfg *policy.Config) (n policy.Network, refused bool) {
	have := policy.Network(meta.Network)
	switch {
	case have == "" || have == cfg.Network:
		return cfg.Network, false
	case KeptDefaultNetwork(meta, cfg) != cfg:
		return have, false // a full box made while full was the default
	case networkRank[have] < networkRank[cfg.Network]:
		return cfg.Network, true
	}
	return have, false
}

// KeptDefaultNetwork returns cfg with network full when meta records a full box and nothing in
// the configuration named a mode (the box was made while full was the default), else cfg
// itself. NetworkFor applies it to sessions, with its notice; views of a box (its egress, its
// template drift) apply it so that they show the mode a session would use.
func KeptDefaultNetwork(meta vm.Meta, cfg *policy.Config) *policy.Config {
	if policy.Network(meta.Network) != policy.NetworkFull || cfg.Network == policy.NetworkFull || !cfg.NetworkDefaulted {
		return cfg
	}
	c := *cfg
	c.Network = policy.NetworkFull
	return &c
}

// mountHint attaches the refused mount's own hint (home.HostPathError) to err.
func mountHint(err error) error {
	var he *home.HostPathError
	if errors.As(err, &he) {
		return hint.With(err, he.Hint())
	}
	return err
}

// ensureError adds the fix to an error of vm.Ensure; mounted says whether the box mounts its
// project (clone-mode boxes get their own hints).
func ensureError(err error, cmd string, create bool) error {
	var h *hint.Error
	switch {
	case errors.As(err, &h), hint.Of(err) != "":
		return err
	case errors.Is(err, vm.ErrMountMode):
		return hint.With(err, "clone mode never uses a box that mounts the host checkout; 'git corral delete' that box first (its disk is lost), or keep source = \"mount\"")
	case errors.Is(err, vm.ErrNoBox) && !create:
		return hint.With(err, "the box holding this clone does not exist; nothing can come back from it")
	case errors.Is(err, vm.ErrNoBox):
		return hint.With(err, fmt.Sprintf("run 'git corral %s --yes' to create it", cmd))
	case errors.Is(err, vm.ErrNoImage):
		return hint.With(err, "build it once as root: 'sudo git corral image build --dir "+vm.SystemImageDir+"'")
	case errors.Is(err, vm.ErrDeclined):
		return err
	default:
		return hint.With(err, "'git corral logs' shows what Lima said")
	}
}

// openCloneDir is Open for a clone directory (one holding clone.RecordName): the box is
// derived from the directory's real path, booted without a mount, and the session runs in the
// guest checkout. ok is false when req.Dir is not in a clone directory.
func openCloneDir(ctx context.Context, req Request) (b *Box, ok bool, err error) {
	cdir, _, err := clone.FindRecord(req.Dir)
	if errors.Is(err, clone.ErrNoRecord) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	real, err := filepath.EvalSymlinks(cdir)
	if err != nil {
		return nil, true, err
	}
	b, err = OpenClone(ctx, CloneRequest{Request: req, Box: project.BoxName(real), HostDir: real, Create: true})
	if err != nil {
		return nil, true, err
	}
	b.Dir, err = b.guestDirOf(ctx, real)
	return b, true, err
}
