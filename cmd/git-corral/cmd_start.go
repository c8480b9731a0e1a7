package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// boxFlags are the flags every command that boots a box shares.
type boxFlags struct {
	yes      *bool
	noCreate *bool
	network  *string
	env      *[]string
	noGolden *bool // golden bases: cmd_golden.go
}

func defineBoxFlags(fs *pflag.FlagSet) boxFlags {
	return boxFlags{
		yes:      fs.BoolP("yes", "y", false, "create the box without asking when it does not exist"),
		noCreate: fs.Bool("no-create", false, "fail instead of creating the box when it does not exist"),
		network:  fs.String("network", "", "network mode of a new box: full, broker or offline"),
		env:      fs.StringArray("env", nil, "pass the host variable `NAME` into the session (repeatable)"),
		noGolden: fs.Bool("no-golden", false, "create a new box from scratch, not from its golden base"),
	}
}

// boxSession is everything a session command needs once the box runs.
type boxSession struct {
	m      *vm.Manager
	box    string
	dir    string
	cfg    *policy.Config
	bundle provision.Bundle
	st     vm.Status
}

// manager finds limactl and returns the box manager for $CORRAL_HOME, refusing root with the fix.
func (a *app) manager() (*vm.Manager, error) {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return nil, err
	}
	limactl, err := vm.FindLimactl(a.getenv)
	if err != nil {
		return nil, withHint(err, "run 'make lima' (or scripts/setup.sh as root); 'git corral doctor' checks every prerequisite")
	}
	m, err := vm.NewManager(limactl, h)
	if errors.Is(err, vm.ErrRoot) {
		return nil, withHint(err, "run git corral as a normal user, e.g. 'runuser -u USER -- git corral …' (the project must belong to that user)")
	}
	return m, err
}

// config is the effective configuration: policy.Default until policy.Load lands, plus --network.
func (a *app) config(f boxFlags) (*policy.Config, error) {
	cfg := policy.Default()
	switch n := policy.Network(*f.network); n {
	case "":
	case policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline:
		cfg.Network = n
	default:
		return nil, usageErrorf("", "--network %q is not full, broker or offline", *f.network)
	}
	return cfg, nil
}

// ensureBox finds the repository's box and makes it run, creating it when allowed.
func (a *app) ensureBox(ctx context.Context, cmd string, f boxFlags) (*boxSession, error) {
	if *f.yes && *f.noCreate {
		return nil, usageErrorf(cmd, "--yes and --no-create exclude each other")
	}
	p, err := a.project(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := a.config(f)
	if err != nil {
		return nil, err
	}
	m, err := a.manager()
	if err != nil {
		return nil, err
	}
	// provision.Render has not landed: the bundle is empty (see CheckGuards for what that means).
	s := &boxSession{m: m, box: p.Box, dir: p.TopLevel, cfg: cfg}
	spec := vm.BoxSpec{
		Box: p.Box, ProjectDir: p.TopLevel, Config: cfg, Bundle: s.bundle, Create: !*f.noCreate,
		Progress: vm.NewProgress(a.stderr, a.isTerminal(a.stderr)), Notice: a.notice,
	}
	if !*f.yes {
		spec.Confirm = a.confirmCreate(p.Box, p.TopLevel)
	}
	spec.Golden = cfg.Golden && !*f.noGolden // golden bases: cmd_golden.go
	a.beforeSession(ctx, m, p.Box, cfg)      // snapshot and idle stop: cmd_snapshot.go, cmd_gc.go
	s.st, err = m.Ensure(ctx, spec)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return nil, err
	case errors.Is(err, vm.ErrNoBox):
		return nil, withHint(err, fmt.Sprintf("run 'git corral %s --yes' to create it", cmd))
	case errors.Is(err, vm.ErrNoImage):
		return nil, withHint(err, "build it once as root: 'sudo git corral image build --dir "+vm.SystemImageDir+"'")
	case err != nil:
		return nil, withHint(err, "'git corral logs' shows what Lima said")
	}
	return s, nil
}

// confirmCreate asks on a terminal before creating a box; without one it refuses.
func (a *app) confirmCreate(box, dir string) func() (bool, error) {
	return func() (bool, error) {
		if !a.isTerminal(a.stdin) || !a.isTerminal(a.stderr) {
			return false, withHint(fmt.Errorf("box %s does not exist and there is no terminal to ask", box),
				"pass --yes to create it, or --no-create to fail fast")
		}
		fmt.Fprintf(a.stderr, "Create box %s for %s? It boots a VM (about a minute). [y/N] ", box, visible.String(dir))
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		ans := strings.ToLower(strings.TrimSpace(line))
		return ans == "y" || ans == "yes", nil
	}
}

// notice prints a one-line notice on stderr.
func (a *app) notice(msg string) {
	fmt.Fprintf(a.stderr, "corral: notice: %s\n", visible.Lines(msg))
}

// session runs one session in the box after the guard check.
func (a *app) session(ctx context.Context, s *boxSession, argv []string, env []string, timeout time.Duration) error {
	ep, err := vm.EndpointFromSSHConfig(s.st.SSHConfig, "lima-"+s.box)
	if err != nil {
		return err
	}
	if ep.HostKeyFile == "" {
		ep.HostKeyFile = filepath.Join(filepath.Dir(s.m.Home.BoxMeta(s.box)), s.box+".known_hosts")
	}
	c, err := vm.Dial(ctx, ep)
	if err != nil {
		return withHint(err, "'git corral logs' shows what Lima said")
	}
	defer c.Close()
	out, err := vm.CheckGuards(ctx, c, s.cfg.Network, s.bundle)
	if err != nil {
		return withHint(err, "the session was refused; 'git corral stop' then 'git corral start' re-applies the guards at boot")
	}
	if out.Absent {
		a.notice("no guest guards are rendered for this box yet (full network, empty provision bundle): the session runs without a guard check")
	}
	vars, err := a.sessionEnv(s.cfg, env)
	if err != nil {
		return err
	}
	tty := a.isTerminal(a.stdin) && a.isTerminal(a.stdout)
	_, err = c.Run(ctx, vm.SessionOptions{
		Argv: argv, Dir: s.dir, Env: vars, TTY: tty, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Timeout: timeout,
	})
	return err
}

// sessionEnv collects the session's variables: the config's literal env and forwarded host
// variables, plus each --env NAME. Values are read here and travel only inside the session.
func (a *app) sessionEnv(cfg *policy.Config, names []string) (map[string]string, error) {
	vars := map[string]string{}
	for k, v := range cfg.Env {
		vars[k] = v
	}
	for _, n := range append(append([]string{}, cfg.ForwardEnv...), names...) {
		if n == "" || strings.ContainsAny(n, "=\x00\n") {
			return nil, usageErrorf("", "--env %q is not a variable name", n)
		}
		if v, ok := os.LookupEnv(n); ok {
			vars[n] = v
		}
	}
	return vars, nil
}

func defineStart(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	return func(ctx context.Context, a *app, args []string) error {
		s, err := a.ensureBox(ctx, "start", f)
		if err != nil {
			return err
		}
		var argv []string
		if s.cfg.DefaultAgent != "" {
			argv = append(strings.Fields(s.cfg.DefaultAgent), args...)
		} else if len(args) > 0 {
			return usageErrorf("start", "no default_agent is configured, so ARGS %q have nothing to go to", args)
		}
		return a.session(ctx, s, argv, *f.env, 0)
	}
}

func defineRun(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	timeout := fs.Duration("timeout", 0, "stop the command after `D` (TERM, then KILL) and exit 124")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) == 0 {
			return usageErrorf("run", "run needs a command: git corral run -- CMD...")
		}
		if *timeout < 0 {
			return usageErrorf("run", "--timeout %s is negative", *timeout)
		}
		s, err := a.ensureBox(ctx, "run", f)
		if err != nil {
			return err
		}
		return a.session(ctx, s, args, *f.env, *timeout)
	}
}

func defineShell(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("shell", "shell takes no arguments; use 'git corral run -- CMD...'")
		}
		s, err := a.ensureBox(ctx, "shell", f)
		if err != nil {
			return err
		}
		return a.session(ctx, s, nil, *f.env, 0)
	}
}
