package main

// Clone-mode boxes: a box that mounts nothing of the host and holds its checkout on its own
// disk, at guestCheckoutDir. Used by "git corral clone" and "git corral fetch" (boxGuest), by
// start/run/shell in a clone directory (cloneDirSession) and by start/run/shell in a checkout
// whose policy says source = "clone" (ensureCloneSource).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/vm"
)

// sourceClone is the policy value of `source` that selects clone mode for a checkout.
const sourceClone = "clone"

// guestRequest says which clone-mode box boxGuest brings up and whether it may create it.
type guestRequest struct {
	// Cmd names the command in hints ("clone", "fetch").
	Cmd string
	// Box is the box name, derived from HostDir.
	Box string
	// HostDir is the real host directory the box belongs to (a clone DIR or a checkout).
	HostDir string
	// Flags, when set, allow creating the box under the --yes / --no-create / terminal rules of
	// start; nil never creates one (fetch).
	Flags *boxFlags
}

// realBoxGuest boots (or creates) the clone-mode box, runs the guard check, and returns the
// box as a clone.Guest with the guest checkout directory. In broker mode the Guest's commands
// get the broker's proxy settings (through the SSH channel, never on a command line).
func realBoxGuest(ctx context.Context, a *app, req guestRequest) (guestBox, error) {
	cfg := policy.Default()
	if req.Flags != nil {
		var err error
		if cfg, err = a.cloneConfig(ctx, req.HostDir, req.Box, *req.Flags); err != nil {
			return guestBox{}, err
		}
	}
	s, err := a.ensureCloneBox(ctx, req.Cmd, req.Flags, req.Box, req.HostDir, cfg)
	if err != nil {
		return guestBox{}, err
	}
	c, err := a.dialGuarded(ctx, s)
	if err != nil {
		return guestBox{}, err
	}
	dir, err := guestCheckoutDir(ctx, c, req.HostDir)
	if err != nil {
		c.Close()
		return guestBox{}, err
	}
	return guestBox{Guest: a.sshGuest(c, s), Dir: dir, Network: s.cfg.Network}, nil
}

// sshGuest is s's SSH client c as a clone.Guest, with the broker's proxy settings when s has a
// broker.
func (a *app) sshGuest(c *vm.Client, s *boxSession) *sshGuest {
	g := &sshGuest{c: c, stderr: a.stderr}
	if s.brokerSecret != nil {
		g.env = proxyEnv(s.brokerSecret, s.brokerPort)
	}
	return g
}

// ensureCloneBox makes box run as a box without any host mount, provisioned with the guest
// scripts of its network mode (cloneSession), and its broker running in broker mode. f == nil
// never creates it and starts no broker (fetch only reads from the box).
func (a *app) ensureCloneBox(ctx context.Context, cmd string, f *boxFlags, box, hostDir string, cfg *policy.Config) (*boxSession, error) {
	if f != nil && *f.yes && *f.noCreate {
		return nil, usageErrorf(cmd, "--yes and --no-create exclude each other")
	}
	if f != nil && f.preflight != nil {
		if err := f.preflight(ctx, box, hostDir, cfg); err != nil {
			return nil, err
		}
	}
	m, err := a.manager()
	if err != nil {
		return nil, err
	}
	s, err := cloneSession(m, box, cfg)
	if err != nil {
		return nil, err
	}
	if len(s.cfg.Provision) > 0 {
		a.notice("provision scripts are not run in a clone-mode box (they run from a mounted checkout); packages are installed")
	}
	spec := vm.BoxSpec{
		Box: box, ProjectDir: hostDir, NoProjectMount: true, Config: s.cfg, Bundle: s.bundle, BrokerPort: s.brokerPort,
		Create:   f != nil && !*f.noCreate,
		Progress: vm.NewProgress(a.stderr, a.isTerminal(a.stderr)), Notice: a.notice,
	}
	if f != nil && !*f.yes {
		spec.Confirm = a.confirmCreate(box, hostDir)
	}
	s.st, err = m.Ensure(ctx, spec)
	if err != nil {
		return nil, cloneEnsureError(err, cmd, f)
	}
	if f != nil && s.cfg.Network == policy.NetworkBroker {
		if s.brokerSecret, err = a.ensureBroker(ctx, m, box, s.cfg, s.brokerPort); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// cloneEnsureError adds the fix to an error of vm.Ensure for a clone-mode box.
func cloneEnsureError(err error, cmd string, f *boxFlags) error {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.Is(err, vm.ErrMountMode):
		return withHint(err, "clone mode never uses a box that mounts the host checkout; 'git corral delete' that box first (its disk is lost), or keep source = \"mount\"")
	case errors.Is(err, vm.ErrNoBox) && f == nil:
		return withHint(err, "the box holding this clone does not exist; nothing can come back from it")
	case errors.Is(err, vm.ErrNoBox):
		return withHint(err, fmt.Sprintf("run 'git corral %s --yes' to create it", cmd))
	case errors.Is(err, vm.ErrNoImage):
		return withHint(err, "build it once as root: 'sudo git corral image build --dir "+vm.SystemImageDir+"'")
	default:
		return withHint(err, "'git corral logs' shows what Lima said")
	}
}

// dialGuarded connects to the running box and runs the guard check, as session does, before
// anything is delivered into or read from the box.
func (a *app) dialGuarded(ctx context.Context, s *boxSession) (*vm.Client, error) {
	ep, err := vm.EndpointFromSSHConfig(s.st.SSHConfig, "lima-"+s.box)
	if err != nil {
		return nil, err
	}
	if ep.HostKeyFile == "" {
		ep.HostKeyFile = filepath.Join(filepath.Dir(s.m.Home.BoxMeta(s.box)), s.box+".known_hosts")
	}
	c, err := a.dialBox(ctx, s.m.Home, s.box, ep, false)
	if err != nil {
		return nil, withHint(err, "'git corral logs' shows what Lima said")
	}
	out, err := vm.CheckGuards(ctx, c, s.cfg.Network, s.bundle)
	if err != nil {
		c.Close()
		return nil, withHint(err, "nothing was delivered or fetched; 'git corral stop' then 'git corral start' re-applies the guards at boot")
	}
	if out.Absent {
		a.notice("no guest guards are rendered for this box yet (full network, empty provision bundle): clone delivery runs without a guard check")
	}
	return c, nil
}

// guestCheckoutDir is where a clone-mode checkout lives in the box: $HOME/src/<name of the
// host directory> in the box user's home (Lima's /home/<user>.linux), which the box user can
// create. The host path itself usually does not exist in the guest. It is derived again on
// every use, never read from the clone record. A name that is not plain becomes "checkout".
func guestCheckoutDir(ctx context.Context, c vm.Outputter, hostDir string) (string, error) {
	out, code, err := c.Output(ctx, []string{"sh", "-c", `printf '%s' "$HOME"`})
	if err != nil || code != 0 {
		return "", fmt.Errorf("read the box user's home: exit %d: %v", code, err)
	}
	return checkoutPath(string(out), filepath.Base(hostDir))
}

// checkoutPath joins the guest home and a host directory name into the guest checkout path.
func checkoutPath(guestHome, name string) (string, error) {
	if !path.IsAbs(guestHome) || path.Clean(guestHome) != guestHome || guestHome == "/" || visible.Has(guestHome) ||
		strings.ContainsAny(guestHome, "\x00\r\n") {
		return "", fmt.Errorf("the box user's home %q is not a clean absolute path", guestHome)
	}
	if name == "" || name == "." || name == ".." || strings.HasPrefix(name, "-") || strings.HasPrefix(name, ".") ||
		strings.ContainsAny(name, "/\\\x00") || visible.Has(name) {
		name = "checkout"
	}
	return path.Join(guestHome, "src", name), nil
}

// sshGuest is a box's SSH client as a clone.Guest: the client quotes argv for the remote shell,
// streams stdin and stdout, and shows the guest's stderr (escaped) on git corral's stderr.
type sshGuest struct {
	c      *vm.Client
	stderr io.Writer
	env    map[string]string
}

// Exec runs argv in the box; a non-zero guest status is returned as the status, not an error.
func (g *sshGuest) Exec(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (int, error) {
	code, err := g.c.Run(ctx, vm.SessionOptions{Argv: argv, Env: g.env, Stdin: stdin, Stdout: stdout, Stderr: &escapedWriter{w: g.stderr}})
	var es vm.ExitStatus
	if errors.As(err, &es) {
		return code, nil
	}
	return code, err
}

// escapedWriter writes guest text with control, bidi and zero-width characters escaped.
type escapedWriter struct{ w io.Writer }

func (e *escapedWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.w, visible.Lines(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// cloneDirSession is ensureBox for a clone directory (one holding clone.RecordName): the box is
// derived from the directory's real path, booted without a mount, and the session runs in the
// guest checkout. ok is false when the working directory is not in a clone directory.
func (a *app) cloneDirSession(ctx context.Context, cmd string, f boxFlags) (s *boxSession, ok bool, err error) {
	dir, err := a.workDir()
	if err != nil {
		return nil, false, err
	}
	cdir, _, err := clone.FindRecord(dir)
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
	cfg, err := a.cloneConfig(ctx, real, project.BoxName(real), f)
	if err != nil {
		return nil, true, err
	}
	s, err = a.ensureCloneBox(ctx, cmd, &f, project.BoxName(real), real, cfg)
	if err != nil {
		return nil, true, err
	}
	s.dir, err = a.guestDirOf(ctx, s, real)
	return s, true, err
}

// guestDirOf asks the running box for its checkout directory of hostDir.
func (a *app) guestDirOf(ctx context.Context, s *boxSession, hostDir string) (string, error) {
	c, err := a.dialGuarded(ctx, s)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return guestCheckoutDir(ctx, c, hostDir)
}

// ensureCloneSource is ensureBox for a checkout whose policy says source = "clone": it boots the
// checkout's box without any mount, delivers the checkout (prepareCloneSource) and returns the
// session with the guest checkout as its directory. The start flow calls it instead of
// mounting when cfg.Source == "clone".
func (a *app) ensureCloneSource(ctx context.Context, cmd string, f boxFlags, p *project.Project, cfg *policy.Config) (*boxSession, error) {
	s, err := a.ensureCloneBox(ctx, cmd, &f, p.Box, p.TopLevel, cfg)
	if err != nil {
		return nil, err
	}
	if s.dir, err = a.prepareCloneSource(ctx, p, s); err != nil {
		return nil, err
	}
	return s, nil
}

// prepareCloneSource gives the running box s the checkout p as committed at HEAD (plus, with
// clone_uncommitted, the current content of tracked files: clone.SnapshotTracked), never an
// untracked file, has the box fetch its submodules, and returns the guest checkout directory.
// A box that already has its checkout keeps it (the box's own work lives there; 'git corral
// fetch' brings it back), so nothing is delivered twice.
func (a *app) prepareCloneSource(ctx context.Context, p *project.Project, s *boxSession) (string, error) {
	c, err := a.dialGuarded(ctx, s)
	if err != nil {
		return "", err
	}
	defer c.Close()
	dir, err := guestCheckoutDir(ctx, c, p.TopLevel)
	if err != nil {
		return "", err
	}
	if _, code, err := c.Output(ctx, []string{"test", "-e", dir + "/.git"}); err != nil {
		return "", err
	} else if code == 0 {
		return dir, nil
	}
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return "", err
	}
	g := a.sshGuest(c, s)
	plan, err := deliverCheckout(ctx, g, p.TopLevel, h.CloneStore(p.Box), dir, s.cfg.CloneUncommitted, transportsFor(s.cfg.Network))
	if err != nil {
		return "", withHint(fmt.Errorf("deliver %s into box %s: %w", p.TopLevel, p.Box, err), "nothing of the host is mounted in the box; fix the cause and run the command again")
	}
	what := "HEAD"
	if s.cfg.CloneUncommitted {
		what = "HEAD and uncommitted changes to tracked files"
	}
	a.notice(fmt.Sprintf("delivered %s of %s into the box at %s (untracked files stay on the host)", what, visible.String(p.TopLevel), visible.String(dir)))
	if err := a.fetchSubmodules(ctx, g, dir, plan); err != nil {
		return "", err
	}
	return dir, nil
}

// deliverCheckout fetches the checkout at top into a fresh store (its previous content is
// replaced: the store is git corral's own), adds the tracked-file snapshot when withChanges is
// set, plans the submodules the box may fetch over transports (a hostile .gitmodules entry
// refuses before anything is delivered) and delivers both into the guest at dir on the
// checkout's current branch.
func deliverCheckout(ctx context.Context, g clone.Guest, top, store, dir string, withChanges bool, transports []string) (clone.SubmodulePlan, error) {
	if err := os.RemoveAll(store); err != nil {
		return clone.SubmodulePlan{}, err
	}
	if err := os.MkdirAll(filepath.Dir(store), 0o700); err != nil {
		return clone.SubmodulePlan{}, err
	}
	res, err := clone.Fetch(ctx, top, store, clone.Options{Cwd: top})
	if err != nil {
		return clone.SubmodulePlan{}, err
	}
	if withChanges {
		if _, err := clone.SnapshotTracked(ctx, top, store); err != nil {
			return clone.SubmodulePlan{}, err
		}
	}
	branch := strings.TrimPrefix(res.Head, "refs/heads/")
	plan, err := clone.PlanSubmodules(store, clone.SubmoduleOptions{Branch: branch, Transports: transports})
	if err != nil {
		return plan, err
	}
	return plan, clone.Deliver(ctx, g, store, clone.DeliverOptions{Dir: dir, Branch: branch})
}

// cloneConfig is the configuration of a clone DIR's box: the trusted layers (global and the
// box's per-project file) and --network as the flag layer. A clone DIR holds no checkout, so
// there is no repository file to read from it.
func (a *app) cloneConfig(ctx context.Context, hostDir, box string, f boxFlags) (*policy.Config, error) {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return nil, err
	}
	opts := policy.LoadOptions{Home: h, TopLevel: hostDir, Box: box}
	if err := addNetworkFlag(&opts, f); err != nil {
		return nil, err
	}
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return nil, err
	}
	return eff.Config, nil
}
