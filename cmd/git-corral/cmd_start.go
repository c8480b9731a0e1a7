package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/session"
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

// request is cmd's session.Request from the parsed flags, with the terminal UI.
func (a *app) request(cmd string, f boxFlags) (session.Request, error) {
	dir, err := a.workDir()
	if err != nil {
		return session.Request{}, err
	}
	r := session.Request{Cmd: cmd, Dir: dir, Getenv: a.getenv, Network: *f.network, Yes: *f.yes, NoCreate: *f.noCreate, UI: a.ui()}
	if f.env != nil {
		r.Env = *f.env
	}
	if f.noGolden != nil {
		r.NoGolden = *f.noGolden
	}
	return r, nil
}

// ui is the session UI of this invocation: its streams, notices, warnings, the confirm prompt
// and the progress display.
func (a *app) ui() session.UI {
	return session.UI{
		Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, IsTerminal: a.isTerminal,
		Notice: a.notice, Warn: a.warn, Confirm: a.confirmCreate,
		Progress: a.progress(),
	}
}

// openBox opens the box of the repository (or clone directory) the command runs in.
func (a *app) openBox(ctx context.Context, cmd string, f boxFlags) (*session.Box, error) {
	req, err := a.request(cmd, f)
	if err != nil {
		return nil, err
	}
	return session.Open(ctx, req)
}

// streams are the invocation's standard streams for a session.
func (a *app) streams() session.Streams {
	return session.Streams{Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr}
}

// confirmCreate asks on a terminal before creating a box; without one it refuses.
func (a *app) confirmCreate(box, dir string) (bool, error) {
	if !a.isTerminal(a.stdin) || !a.isTerminal(a.stderr) {
		return false, withHint(fmt.Errorf("box %s does not exist and there is no terminal to ask", box),
			"pass --yes to create it, or --no-create to fail fast")
	}
	fmt.Fprintf(a.stderr, "Create box %s for %s? It boots a VM (about a minute). [y/N] ", box, visible.String(dir))
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes", nil
}

// notice prints a one-line notice on stderr.
func (a *app) notice(msg string) {
	fmt.Fprintf(a.stderr, "corral: notice: %s\n", visible.Lines(msg))
}

// warn prints a one-line warning on stderr.
func (a *app) warn(msg string) {
	fmt.Fprintf(a.stderr, "corral: warning: %s\n", visible.Lines(msg))
}

func defineStart(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	return func(ctx context.Context, a *app, args []string) error {
		b, err := a.openBox(ctx, "start", f)
		if err != nil {
			return err
		}
		var argv []string
		if b.Config.DefaultAgent != "" {
			argv = append(strings.Fields(b.Config.DefaultAgent), args...)
		} else if len(args) > 0 {
			return usageErrorf("start", "no default_agent is configured, so ARGS %q have nothing to go to", args)
		}
		return b.Run(ctx, argv, a.streams(), 0)
	}
}

func defineRun(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	timeout := fs.Duration("timeout", 0, "stop the command after `D` (TERM, then KILL) and exit 124 (default: the timeout key)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) == 0 {
			return usageErrorf("run", "run needs a command: git corral run -- CMD...")
		}
		if *timeout < 0 {
			return usageErrorf("run", "--timeout %s is negative", *timeout)
		}
		b, err := a.openBox(ctx, "run", f)
		if err != nil {
			return err
		}
		return b.Run(ctx, args, a.streams(), session.RunTimeout(*timeout, fs.Changed("timeout"), b.Config))
	}
}

func defineShell(fs *pflag.FlagSet) runFunc {
	f := defineBoxFlags(fs)
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("shell", "shell takes no arguments; use 'git corral run -- CMD...'")
		}
		b, err := a.openBox(ctx, "shell", f)
		if err != nil {
			return err
		}
		return b.Run(ctx, nil, a.streams(), 0)
	}
}
