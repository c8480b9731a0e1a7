package main

import (
	"context"
	"errors"

	"github.com/spf13/pflag"
)

// errNoBoxYet is what the session commands say until the vm package can boot a box.
var errNoBoxYet = errors.New("booting a box is not available in this build yet: the vm package has not landed")

func defineStart(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, args []string) error {
		if _, err := a.project(ctx); err != nil {
			return err
		}
		return withHint(errNoBoxYet, "'git corral info' shows the repository and the box it would get")
	}
}

func defineRun(fs *pflag.FlagSet) runFunc { return defineStart(fs) }

func defineShell(fs *pflag.FlagSet) runFunc { return defineStart(fs) }
