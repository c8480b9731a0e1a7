package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/session"
	"github.com/git-corral/git-corral/vm"
)

func defineGC(fs *pflag.FlagSet) runFunc {
	dry := fs.Bool("dry-run", false, "only list the idle boxes")
	idle := fs.Duration("idle", -1, "idle limit `D` for boxes that recorded none (default: idle_stop of the effective config)")
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("gc", "gc takes no arguments")
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		limit := *idle
		if limit < 0 {
			// idle_stop of this repository's configuration, or the defaults outside one.
			cfg := policy.Default()
			if p, err := a.project(ctx); err == nil {
				if cfg, err = a.projectConfig(ctx, p); err != nil {
					return err
				}
			}
			limit = cfg.IdleStop
		}
		boxes, err := m.StopIdle(ctx, time.Now(), limit, "", *dry)
		if err != nil {
			return err
		}
		if err := session.AuditIdleStops(ctx, m, boxes, "git corral gc"); err != nil {
			return err
		}
		if *jsonOut {
			if boxes == nil {
				boxes = []vm.IdleBox{}
			}
			return a.printJSON(map[string]any{"dryRun": *dry, "idle": boxes})
		}
		for _, b := range boxes {
			a.printIdle(b, *dry)
		}
		if len(boxes) == 0 {
			fmt.Fprintln(a.stderr, "no idle box")
		}
		return nil
	}
}

// printIdle prints one idle box and what gc did with it.
func (a *app) printIdle(b vm.IdleBox, dry bool) {
	idle := time.Duration(b.IdleSecs) * time.Second
	switch {
	case dry:
		fmt.Fprintf(a.stdout, "box %s idle for %s (idle_stop %s): would stop\n", b.Box, idle, b.Limit)
	case b.Stopped:
		fmt.Fprintf(a.stdout, "box %s idle for %s (idle_stop %s): stopped\n", b.Box, idle, b.Limit)
	default:
		fmt.Fprintf(a.stdout, "box %s idle for %s (idle_stop %s): not stopped: %s\n", b.Box, idle, b.Limit, b.Error)
	}
}
