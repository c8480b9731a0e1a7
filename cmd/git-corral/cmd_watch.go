package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/session"
)

// defineWatch is the box's lifecycle watcher (session.StartWatcher starts it detached): it
// stops the box after its last session with stop_on_exit, or once idle_stop has passed.
func defineWatch(fs *pflag.FlagSet) runFunc {
	poll := fs.Duration("poll", 0, "look at the box every `D` (default 2s)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("watch", "watch takes no arguments")
		}
		if *poll < 0 {
			return usageErrorf("watch", "--poll %v is negative", *poll)
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		r, err := session.Watch(ctx, m, box, *poll)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "watch %s: stopped=%t: %s\n", box, r.Stopped, r.Reason)
		return nil
	}
}
