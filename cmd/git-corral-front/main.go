// Command git-corral-front is what make install puts on PATH as git-corral: a small static
// binary that runs `git corral sandbox -- CMD` itself and execs the full git corral binary
// (FullName, in PREFIX/lib/git-corral, off PATH) for every other command line, with the same
// arguments, environment and descriptors, so that its output and exit code are the full
// binary's own.
//
// Why: Go runs every linked package's initialisers before main, whatever the command, and
// the full binary links Lima, go-git and yq (229 initialisers, ~12 ms of clock, and a 35 MB
// cgo binary's start, ~30 ms of CPU here): the light tier's whole budget (issue #30 point 6).
// A box command pays one more process start for it: the runtime's and a dozen initialisers
// (package handoff execs the full binary before the rest).
//
// Rules:
//   - It runs only what package dispatch says a front takes (a run: -C flags, sandbox,
//     --manifest, --no-landlock and a command), through the same flow as the full binary
//     (package front); help, usage errors, --box and every other command go to the full
//     binary, which answers them as it always has.
//   - 'sandbox --stage NAME' is the inside steps (package inside), for when the inside
//     helper is not installed beside it.
//   - It links neither Lima, go-git nor the box packages (TestFrontLinksNoBox), nor net/http,
//     TLS, the broker or the login store (TestFrontLinksNoNetwork), and is built without cgo.
//     A run whose manifest grants network access, which needs the broker, goes to the full
//     binary before anything ran (sandbox.ErrNeedsBroker): one more process start for it, and
//     none of the broker's cost for every other run.
//   - Without the full binary it runs no other command: it says where it looked and exits 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	// Before the other packages' initialisers: every command line but a sandbox run is
	// handed to the full binary here (package handoff); main sees only what is left.
	_ "github.com/git-corral/git-corral/cmd/git-corral-front/internal/handoff"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/inherit"
	"github.com/git-corral/git-corral/sandbox"
	"github.com/git-corral/git-corral/sandbox/dispatch"
	"github.com/git-corral/git-corral/sandbox/front"
	"github.com/git-corral/git-corral/sandbox/inside"
)

func main() {
	os.Exit(run(context.Background(), os.Args))
}

// run is the front's main: the inside steps, a sandbox run, or the exec of the full binary.
func run(ctx context.Context, argv []string) int {
	args := argv[1:]
	e := front.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	if stage, ok := dispatch.Stage(args); ok {
		return inside.Stage(stage)
	}
	if dispatch.Takes(args) {
		err := sandboxRun(ctx, e, args)
		if !errors.Is(err, sandbox.ErrNeedsBroker) {
			return front.Report(e, err)
		}
		// Nothing ran: the full binary, which links the broker, runs the command line.
		return execFull(e, argv, "a manifest without [network] runs without it")
	}
	// Package handoff execs the full binary before the initialisers; this is its fallback,
	// through os, when /proc could not tell it its argv or path.
	return execFull(e, argv, "'git corral sandbox -- CMD' alone works without it")
}

// execFull execs the full binary with argv, or says where it looked and what works without
// it (without).
func execFull(e front.Env, argv []string, without string) int {
	self, err := os.Executable()
	if err != nil {
		return front.Report(e, fmt.Errorf("find the git-corral binary itself: %w", err))
	}
	full := dispatch.Beside(self, dispatch.FullName)
	if full == "" {
		dir := filepath.Dir(self)
		return front.Report(e, hint.With(fmt.Errorf("the full git corral binary %s is installed neither in %s nor beside %s",
			dispatch.FullName, filepath.Join(filepath.Dir(dir), "lib", "git-corral"), self),
			"install git corral again ('make install'); "+without))
	}
	// The same argv (argv[0] included), environment and descriptors: the full binary answers
	// exactly as if it had been started in this one's place.
	err = syscall.Exec(full, argv, os.Environ())
	return front.Report(e, fmt.Errorf("run the full git corral binary %s: %w", full, err))
}

// sandboxRun is the full binary's main for the command lines dispatch.Takes: the -C flags,
// then sandbox and its flags (cmd/git-corral, app.dispatch and runCommand). It has no broker
// (front.Env.Broker): a run whose manifest grants network access is sandbox.ErrNeedsBroker.
func sandboxRun(ctx context.Context, e front.Env, args []string) error {
	// As the full binary's main does first: no inherited descriptor reaches what it starts.
	if err := inherit.CloseOnExec(3); err != nil {
		return hint.With(err, "nothing ran; git corral starts nothing while a descriptor it inherited could reach it")
	}
	for args[0] != "sandbox" { // Takes: only -C DIR and -CDIR come before it
		if args[0] == "-C" {
			e.Dir, args = front.JoinDir(e.Dir, args[1]), args[2:]
		} else {
			e.Dir, args = front.JoinDir(e.Dir, args[0][2:]), args[1:]
		}
	}
	fs := pflag.NewFlagSet("git corral sandbox", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	f := front.Define(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return &front.Error{Code: 129, Err: err, Hint: "run 'git corral sandbox -h' for its usage"}
	}
	return front.Run(ctx, e, f, fs.Args())
}
