package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// defaultConnectionIdle is how long a connection holder waits without a client before it ends.
const defaultConnectionIdle = 15 * time.Minute

func defineConnection(fs *pflag.FlagSet) runFunc {
	idle := fs.Duration("idle", defaultConnectionIdle, "end after this long without a client")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) != 1 || args[0] != "serve" {
			return usageErrorf("connection", "connection takes one verb: serve")
		}
		if *idle <= 0 {
			return usageErrorf("connection", "--idle %v is not a positive duration", *idle)
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		st, err := m.Inspect(box)
		if err != nil {
			return err
		}
		if st.Status != "Running" {
			return withHint(fmt.Errorf("box %s is %s", box, st.Status), "'git corral start' boots it")
		}
		ep, err := vm.EndpointFromSSHConfig(st.SSHConfig, "lima-"+box)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		up, err := vm.Dial(ctx, ep)
		if err != nil {
			return err
		}
		defer up.Close()
		return vm.ServeMux(ctx, up, vm.HolderPaths(m.Home, box), vm.MuxOptions{
			Idle: *idle, Sockets: []string{provision.GuardSocketPath},
			WarmShell: a.getenv("CORRAL_NO_WARM_SHELL") != "1",
		})
	}
}
