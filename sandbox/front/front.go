// Package front is the host side of `git corral sandbox`: its flags, the options of a run, the
// narrowing by the repository's [sandbox] table, the run and the lines printed about how it
// ended. The front on PATH (cmd/git-corral-front, installed as git-corral) runs it when the
// command line is a run (package dispatch), and the full binary runs it in-process (cmd/git-corral,
// cmd_sandbox.go) for the same command line when it is started itself: one flow, two entries.
//
// It owns what `git corral sandbox -- CMD` does between the command line and sandbox.Run, and
// the rendering of its errors in the front (Report, in the form git corral's own report
// gives them).
//
// It does not own the sandbox (package sandbox), the table's rules (package policy), git
// corral's other commands, its help (the man page, printed by git corral) or its global flags
// other than -C (the front is given no other: dispatch.Takes).
//
// Rules:
//   - It imports neither Lima, go-git, vm, session nor provision: the front links it,
//     and every package linked runs its initialisers at every start (TestFrontLinksNoBox).
//   - Errors that need an exit code other than 1 are *Error; a command's status is Status,
//     passed through silently.
package front

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/sandbox"
)

// Exit codes the front gives (git corral's, DESIGN.md).
const (
	exitNoRepo = project.ExitNoRepo
	exitUsage  = 129
)

// Env is one invocation's streams, environment and -C directory.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Dir is the directory given with -C (empty: the current directory).
	Dir string
	// Broker serves a manifest's network grant: the full binary's (sandbox/netbroker). The
	// front on PATH has none; Run returns sandbox.ErrNeedsBroker for a run that needs it,
	// before anything ran, and the front hands the command line to the full binary.
	Broker sandbox.Broker
}

// Flags are the command's flags, registered by Define.
type Flags struct {
	Manifest   *string
	NoLandlock *bool
}

// Define registers the command's flags on fs, in the order its help lists them.
func Define(fs *pflag.FlagSet) Flags {
	return Flags{
		Manifest:   fs.String("manifest", "", "the manifest (TOML) of what the command is granted"),
		NoLandlock: fs.Bool("no-landlock", false, "accept a kernel without Landlock (logged)"),
	}
}

// Error is an error with its exit code and hint.
type Error struct {
	Code int
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Status is the sandboxed command's exit status, passed through.
type Status int

func (s Status) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// Run runs args in the light tier as flags say, and prints how a limit ended it.
func Run(ctx context.Context, e Env, f Flags, args []string) error {
	if len(args) == 0 {
		//lint:ignore ST1005 the message ends with the usage line's own "CMD...", as the full binary's did
		return &Error{Code: exitUsage, Err: errors.New("sandbox needs a command: git corral sandbox [--manifest FILE] -- CMD..."),
			Hint: "run 'git corral sandbox -h' for its usage"}
	}
	o, err := options(e, *f.Manifest, args)
	if err != nil {
		return err
	}
	if o.Manifest, err = narrow(ctx, e, o.Manifest, o.Home); err != nil {
		return err
	}
	if e.Broker == nil && o.Manifest != nil && len(o.Manifest.Network) > 0 { // the table only narrows: never
		return sandbox.ErrNeedsBroker
	}
	o.NoLandlock = *f.NoLandlock
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := sandbox.Run(ctx, o)
	if errors.Is(err, sandbox.ErrSetup) {
		return hint.With(err, "nothing ran; fix the manifest or the host and run it again (the run is in $CORRAL_HOME/logs/sandbox.jsonl)")
	}
	if err != nil {
		return err
	}
	switch {
	case res.Default:
		fmt.Fprintf(e.Stderr, "corral: sandbox: the command was stopped by limits.%s at its default, %s (status %d)\n", res.Limit, sandbox.DefaultText(res.Limit), res.Status)
		fmt.Fprintf(e.Stderr, "corral: hint: raise it in the manifest's [limits] (%s = …) and pass it with --manifest FILE\n", res.Limit)
	case res.Limit != "":
		fmt.Fprintf(e.Stderr, "corral: sandbox: the command was stopped by limits.%s (status %d)\n", res.Limit, res.Status)
	}
	if res.Status != 0 {
		return Status(res.Status)
	}
	return nil
}

// options gathers the host side of a sandboxed run.
func options(e Env, manifest string, args []string) (sandbox.Options, error) {
	h, err := home.Resolve(e.Getenv)
	if err != nil {
		return sandbox.Options{}, err
	}
	cwd, err := WorkDir(e.Dir)
	if err != nil {
		return sandbox.Options{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return sandbox.Options{}, fmt.Errorf("find the git corral binary to run inside the sandbox: %w", err)
	}
	o := sandbox.Options{
		Argv: args, Home: e.Getenv("HOME"), CorralHome: h.Dir, Cwd: cwd, Self: sandbox.InsideBinary(self),
		Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr,
		Lookup: func(n string) (string, bool) { v := e.Getenv(n); return v, v != "" },
		Broker: e.Broker,
	}
	if manifest != "" {
		o.Manifest, err = sandbox.LoadManifest(manifest, o.Home, e.Broker)
		if errors.Is(err, sandbox.ErrNeedsBroker) {
			return o, err
		}
		if err != nil {
			return o, hint.With(err, "see 'git corral sandbox -h' for the manifest's keys")
		}
	}
	return o, nil
}

// WorkDir is the directory a command acts on: dir (-C) or the current directory; as git says
// for -C, the directory must be there before anything looks inside it.
func WorkDir(dir string) (string, error) {
	if dir == "" {
		return os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		why := "not a directory"
		if err != nil {
			why = errors.Unwrap(err).Error()
		}
		return "", &Error{Code: exitNoRepo, Err: fmt.Errorf("cannot change to %q: %s", dir, why), Hint: "name an existing directory with -C"}
	}
	return abs, nil
}

// JoinDir applies a -C argument the way git does: relative to the previous -C. The front and
// the full binary read -C with it.
func JoinDir(base, dir string) string {
	if base == "" || filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join(base, dir)
}
