package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/inherit"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/sandbox/front"
	"github.com/git-corral/git-corral/session"
	"github.com/git-corral/git-corral/vm"
)

// Exit codes (DESIGN.md): run and shell pass the guest command's status through instead.
const (
	exitOK      = 0
	exitFailure = 1
	exitTimeout = 124
	exitNoRepo  = project.ExitNoRepo
	exitUsage   = 129
)

// app is one invocation: its streams, environment and global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	// dir is the directory given with -C (empty: the current directory).
	dir string
	// box is the box named with --box (empty: the box of the repository).
	box string
}

// exitError carries an exit code other than 1 (and, optionally, a hint) up to main.
type exitError struct {
	code int
	err  error
	hint string
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode attaches an exit code and a hint to err.
func withCode(code int, err error, hint string) error {
	return &exitError{code: code, err: err, hint: hint}
}

// withHint attaches a hint to err; the exit code stays 1.
func withHint(err error, h string) error {
	return hint.With(err, h)
}

// usageErrorf is a command-line mistake: exit 129 with a pointer to the command's help.
func usageErrorf(cmd, format string, args ...any) error {
	hint := "run 'git corral help' for the list of commands"
	if cmd != "" {
		hint = fmt.Sprintf("run 'git corral %s -h' for its usage", cmd)
	}
	return withCode(exitUsage, fmt.Errorf(format, args...), hint)
}

// main parses the global flags, dispatches to the command and turns its error into an exit code.
// First of all it marks every descriptor git corral inherited close-on-exec (package inherit),
// so that none of them reaches a program it starts: the sandboxed command, limactl and the
// VM behind it, the broker and watch daemons, npm.
func (a *app) main(ctx context.Context, args []string) int {
	if err := inherit.CloseOnExec(3); err != nil {
		return a.report(withHint(err, "nothing ran; git corral starts nothing while a descriptor it inherited could reach it"))
	}
	err := a.dispatch(ctx, args)
	if err == nil {
		return exitOK
	}
	return a.report(err)
}

// report prints err as "corral: error: …" and "corral: hint: …" lines and returns the exit code.
func (a *app) report(err error) int {
	var gs interface{ GuestStatus() int }
	if errors.As(err, &gs) {
		// The guest's own status passes through silently; a status git corral gave it (a
		// timeout, a signal) says why.
		_, plain := err.(vm.ExitStatus)
		_, quiet := err.(quietExit)
		if !plain && !quiet {
			fmt.Fprintf(a.stderr, "corral: %s\n", visible.Lines(err.Error()))
		}
		return gs.GuestStatus()
	}
	code, h := exitFailure, hint.Of(err)
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.hint != "" {
			h = ee.hint
		}
	}
	if ph, ok := project.Hint(err); ok {
		code = exitNoRepo
		if h == "" {
			h = ph
		}
	}
	label := "error"
	if a.colorOn(a.stderr) {
		label = "\x1b[1;31merror\x1b[0m"
	}
	fmt.Fprintf(a.stderr, "corral: %s: %s\n", label, visible.Lines(err.Error()))
	if h != "" {
		fmt.Fprintf(a.stderr, "corral: hint: %s\n", visible.Lines(h))
	}
	return code
}

// dispatch parses the global flags (-C, --box, -h) and runs the named command.
func (a *app) dispatch(ctx context.Context, args []string) error {
	for len(args) > 0 {
		switch arg := args[0]; {
		case arg == "-C" || arg == "--box":
			if len(args) < 2 {
				return usageErrorf("", "flag %s needs a value", arg)
			}
			if arg == "-C" {
				a.dir = front.JoinDir(a.dir, args[1])
			} else {
				a.box = args[1]
			}
			args = args[2:]
		case strings.HasPrefix(arg, "-C") && len(arg) > 2:
			a.dir = front.JoinDir(a.dir, arg[2:])
			args = args[1:]
		case strings.HasPrefix(arg, "--box="):
			a.box = strings.TrimPrefix(arg, "--box=")
			args = args[1:]
		case arg == "-h" || arg == "--help":
			return a.printSummary(a.stdout)
		case arg == "--version":
			return runCommand(ctx, a, lookup("version"), nil)
		case strings.HasPrefix(arg, "-"):
			return usageErrorf("", "unknown global flag %q", arg)
		default:
			cmd := lookup(arg)
			if cmd == nil {
				if near := suggest(arg); near != "" {
					return withCode(exitUsage, fmt.Errorf("%q is not a git corral command", arg),
						fmt.Sprintf("did you mean 'git corral %s'? ('git corral help' lists the commands)", near))
				}
				return usageErrorf("", "%q is not a git corral command", arg)
			}
			if a.box != "" && !cmd.usesBox {
				return withCode(exitUsage, fmt.Errorf("--box does not apply to 'git corral %s': it acts on the repository it runs in", cmd.name),
					"name the repository with -C DIR instead")
			}
			return runCommand(ctx, a, cmd, args[1:])
		}
	}
	a.printSummary(a.stderr)
	return withCode(exitUsage, errors.New("no command given"), "run 'git corral help' for the list of commands")
}

// runCommand parses cmd's flags from args and runs it.
func runCommand(ctx context.Context, a *app, cmd *command, args []string) error {
	fs := pflag.NewFlagSet("git corral "+cmd.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(!cmd.stopAtFirstArg)
	help := fs.BoolP("help", "h", false, "show this help")
	run := cmd.define(fs)
	if err := fs.Parse(args); err != nil {
		return usageErrorf(cmd.name, "%s", err)
	}
	if *help {
		if wantsManual(args) {
			return printCommandHelp(a.stdout, cmd.name)
		}
		return printShortHelp(a.stdout, cmd)
	}
	err := run(ctx, a, fs.Args())
	if errors.Is(err, session.ErrUsage) {
		return usageErrorf(cmd.name, "%s", err)
	}
	return err
}

// manager finds limactl and returns the box manager for $CORRAL_HOME.
func (a *app) manager() (*vm.Manager, error) {
	return session.Manager(a.getenv)
}

// wantsManual reports whether the command line asked for --help (the manual section) rather
// than -h (the short usage), looking only at flags before "--".
func wantsManual(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--help" {
			return true
		}
	}
	return false
}

// workDir is the directory the command acts on: -C or the current directory.
func (a *app) workDir() (string, error) {
	if a.dir == "" {
		return os.Getwd()
	}
	dir, err := filepath.Abs(a.dir)
	if err != nil {
		return "", err
	}
	// As git says for -C: the directory must be there before anything looks inside it.
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		why := "not a directory"
		if err != nil {
			why = errors.Unwrap(err).Error()
		}
		return "", withCode(exitNoRepo, fmt.Errorf("cannot change to %q: %s", a.dir, why), "name an existing directory with -C")
	}
	return dir, nil
}

// project finds the repository the command runs in, with Box the box commands act on: the
// trusted name when set (session.ProjectBox, the rule start applies), else the derived name.
// The configuration's per-project layer stays keyed by project.BoxName(p.TopLevel).
func (a *app) project(ctx context.Context) (*project.Project, error) {
	p, err := a.findProject(ctx)
	if err != nil {
		return nil, err
	}
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return nil, err
	}
	if p.Box, err = session.ProjectBox(ctx, h, p); err != nil {
		return nil, err
	}
	return p, nil
}

// findProject finds the repository the command runs in, with Box derived from its path (the
// key of its per-project configuration file), reading no configuration.
func (a *app) findProject(ctx context.Context) (*project.Project, error) {
	dir, err := a.workDir()
	if err != nil {
		return nil, err
	}
	return project.Find(ctx, dir)
}

// printJSON writes v as one indented JSON document.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// colorOn reports whether w should get colour: a terminal, NO_COLOR unset, TERM not dumb.
func (a *app) colorOn(w io.Writer) bool {
	if a.getenv("NO_COLOR") != "" || a.getenv("TERM") == "dumb" || a.getenv("TERM") == "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress is the display of a long operation's phases on stderr: a redrawn status line on a
// terminal that can redraw one, one timestamped line per phase otherwise.
func (a *app) progress() *vm.Progress {
	return vm.NewProgress(a.stderr, redraws(a.isTerminal(a.stderr), a.getenv("TERM")))
}

// redraws reports whether a stream can take a redrawn status line: a terminal whose TERM is set
// and not "dumb" (a dumb terminal, Emacs' shell, shows every \r and escape as text).
func redraws(tty bool, term string) bool {
	return tty && term != "" && term != "dumb"
}

// isTerminal reports whether w is a terminal.
func (a *app) isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
