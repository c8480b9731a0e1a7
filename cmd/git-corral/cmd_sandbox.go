package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/sandbox"
	"github.com/git-corral/git-corral/vm"
)

func defineSandbox(fs *pflag.FlagSet) runFunc {
	manifest := fs.String("manifest", "", "the manifest (TOML) of what the command is granted")
	noLandlock := fs.Bool("no-landlock", false, "accept a kernel without Landlock (logged)")
	stage := fs.String("stage", "", "a step inside the sandbox (git corral runs it itself)")
	return func(ctx context.Context, a *app, args []string) error {
		if *stage != "" {
			return statusOf(sandbox.Stage(*stage))
		}
		if len(args) == 0 {
			return usageErrorf("sandbox", "sandbox needs a command: git corral sandbox [--manifest FILE] -- CMD...")
		}
		o, err := a.sandboxOptions(*manifest, args)
		if err != nil {
			return err
		}
		if o.Manifest, err = a.narrowSandbox(ctx, o.Manifest, o.Home); err != nil {
			return err
		}
		o.NoLandlock = *noLandlock
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		res, err := sandbox.Run(ctx, o)
		if errors.Is(err, sandbox.ErrSetup) {
			return withHint(err, "nothing ran; fix the manifest or the host and run it again (the run is in $CORRAL_HOME/logs/sandbox.jsonl)")
		}
		if err != nil {
			return err
		}
		switch {
		case res.Default:
			fmt.Fprintf(a.stderr, "corral: sandbox: the command was stopped by limits.%s at its default, %s (status %d)\n", res.Limit, sandbox.DefaultText(res.Limit), res.Status)
			fmt.Fprintf(a.stderr, "corral: hint: raise it in the manifest's [limits] (%s = …) and pass it with --manifest FILE\n", res.Limit)
		case res.Limit != "":
			fmt.Fprintf(a.stderr, "corral: sandbox: the command was stopped by limits.%s (status %d)\n", res.Limit, res.Status)
		}
		return statusOf(res.Status)
	}
}

// sandboxOptions gathers the host side of a sandboxed run.
func (a *app) sandboxOptions(manifest string, args []string) (sandbox.Options, error) {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return sandbox.Options{}, err
	}
	cwd, err := a.workDir()
	if err != nil {
		return sandbox.Options{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return sandbox.Options{}, fmt.Errorf("find the git corral binary to run inside the sandbox: %w", err)
	}
	o := sandbox.Options{
		Argv: args, Home: a.getenv("HOME"), CorralHome: h.Dir, Cwd: cwd, Self: sandbox.InsideBinary(self),
		Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr,
		Lookup: func(n string) (string, bool) { v := a.getenv(n); return v, v != "" },
	}
	if manifest != "" {
		if o.Manifest, err = sandbox.LoadManifest(manifest, o.Home); err != nil {
			return o, withHint(err, "see 'git corral sandbox -h' for the manifest's keys")
		}
	}
	return o, nil
}

// narrowSandbox narrows m by this repository's .corral.toml [sandbox] table, loaded as every
// command loads the configuration; outside a repository m is used as it is.
func (a *app) narrowSandbox(ctx context.Context, m *sandbox.Manifest, homeDir string) (*sandbox.Manifest, error) {
	if dir, err := a.workDir(); err == nil && !a.mayBeCheckout(dir) {
		return m, nil
	}
	opts, err := a.loadOptions(ctx, "")
	if errors.Is(err, project.ErrNotRepository) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return nil, withHint(err, "nothing ran; fix the configuration ('git corral config check' lists every problem)")
	}
	n, err := narrowManifest(m, eff, homeDir)
	if err != nil {
		return nil, withHint(err, "nothing ran; the repository's [sandbox] may only narrow the manifest: widen the manifest (--manifest FILE) or narrow the table")
	}
	return n, nil
}

// narrowManifest returns m narrowed by the repository's [sandbox] table in eff (policy decides:
// Effective.NarrowSandbox); m itself when the table sets nothing. It lives here rather than in
// package sandbox so that the small inside helper (cmd/git-corral-sandbox), which imports
// sandbox, does not pay for policy's package initialisers at every sandboxed start.
func narrowManifest(m *sandbox.Manifest, eff *policy.Effective, home string) (*sandbox.Manifest, error) {
	if m == nil {
		m = &sandbox.Manifest{}
	}
	file := eff.SandboxFile()
	if file == "" {
		return m, nil
	}
	// The defaults are what the repository narrows when the manifest leaves a limit unset.
	l := m.Limits.WithDefaults()
	g, err := eff.NarrowSandbox(policy.SandboxGrant{Read: m.Read, Write: m.Write, Exec: m.Exec, Network: m.Network, Env: m.Env,
		Timeout: l.Timeout, CPU: l.CPU, Memory: l.Memory, Output: l.Output, Scratch: l.Scratch, Pids: l.Pids}, home)
	if err != nil {
		return nil, fmt.Errorf("narrow the sandbox manifest by %s: %w", file, err)
	}
	// A limit still at its default stays unset: logged as the default, and a run that needs no
	// init step keeps going without it.
	lim := sandbox.Limits{Timeout: g.Timeout, CPU: g.CPU, Memory: g.Memory, Output: g.Output, Scratch: g.Scratch, Pids: g.Pids}
	return &sandbox.Manifest{Source: m.Source, Digest: m.Digest, NarrowedBy: file,
		Read: g.Read, Write: g.Write, Exec: g.Exec, Network: g.Network, Env: g.Env,
		Limits: lim.Unset(m.Limits)}, nil
}

// mayBeCheckout reports whether dir may lie in a checkout, so that git's own lookup (two git
// processes, a third of the light tier's start-up) runs only then: git finds a work tree only
// through a .git in dir or above it, or through its location variables; and with no
// .corral.toml there either, there is no [sandbox] table that could narrow the run.
func (a *app) mayBeCheckout(dir string) bool {
	for _, v := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR"} {
		if a.getenv(v) != "" {
			return true
		}
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		for _, name := range []string{".git", policy.RepoFile} {
			if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
				return true
			}
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// statusOf passes a sandboxed command's status through, silently.
func statusOf(code int) error {
	if code == 0 {
		return nil
	}
	return vm.ExitStatus(code)
}
