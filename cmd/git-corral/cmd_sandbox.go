package main

import (
	"context"
	"errors"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/sandbox"
	"github.com/git-corral/git-corral/sandbox/front"
	"github.com/git-corral/git-corral/sandbox/netbroker"
	"github.com/git-corral/git-corral/vm"
)

// defineSandbox is `git corral sandbox`: the flow is package front's, which the front on PATH
// (cmd/git-corral-front) runs itself for a run; here it runs in-process when the full binary
// is started itself (what the front hands over is help and usage errors, which never reach
// the run). --stage is the inside steps, when the small helper is not installed.
func defineSandbox(fs *pflag.FlagSet) runFunc {
	f := front.Define(fs)
	stage := fs.String("stage", "", "a step inside the sandbox (git corral runs it itself)")
	return func(ctx context.Context, a *app, args []string) error {
		if *stage != "" {
			return statusOf(sandbox.Stage(*stage))
		}
		e := front.Env{Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Getenv: a.getenv, Dir: a.dir, Broker: netbroker.Broker{}}
		err := front.Run(ctx, e, f, args)
		var st front.Status
		var fe *front.Error
		switch {
		case errors.As(err, &st):
			return statusOf(int(st))
		case errors.As(err, &fe):
			return withCode(fe.Code, fe.Err, fe.Hint)
		}
		return err
	}
}

// statusOf passes a sandboxed command's status through, silently.
func statusOf(code int) error {
	if code == 0 {
		return nil
	}
	return vm.ExitStatus(code)
}
