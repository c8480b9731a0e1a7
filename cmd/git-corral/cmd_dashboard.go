package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/dashboard"
)

// defineDashboard wires `git corral dashboard`: package dashboard does the work; main passes in
// the two readers it owns (Lima's state through the manager, the egress log through the egress
// command's reader) and the binary the dashboard's actions run.
func defineDashboard(fs *pflag.FlagSet) runFunc {
	interval := fs.Duration("interval", time.Second, "how often to read the boxes and logs again")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("dashboard", "dashboard takes no arguments")
		}
		if *interval < 100*time.Millisecond {
			return usageErrorf("dashboard", "--interval must be at least 100ms, got %s", *interval)
		}
		if !a.isTerminal(a.stdin) || !a.isTerminal(a.stdout) {
			return withHint(errors.New("dashboard needs a terminal on its input and output"),
				"for scripts, use 'git corral list --json' (every box) or 'git corral egress --json' (a box's egress)")
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the git corral binary the dashboard's actions run: %w", err)
		}
		l := &dashboard.Loader{Home: m.Home, Inspect: m.Inspect, ReadEgress: broker.ReadLog, Instances: func() ([]string, error) {
			sts, err := m.Boxes()
			names := make([]string, 0, len(sts))
			for _, s := range sts {
				names = append(names, s.Name)
			}
			return names, err
		}}
		cfg := dashboard.Config{Load: l.Load, Decisions: l.Decisions, Self: self, Color: a.colorOn(a.stdout), Interval: *interval}
		return dashboard.Run(ctx, cfg, a.stdin, a.stdout)
	}
}
