package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/provision"
)

func defineReview(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	approve := fs.Bool("approve", false, "record approval of what is shown")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("review", "review takes no arguments")
		}
		p, h, box, cfg, err := a.provisionContext(ctx)
		if err != nil {
			return err
		}
		req := provision.RequestFromConfig(p.TopLevel, cfg)
		r, err := provision.Review(ctx, h, box, req)
		if err != nil {
			return err
		}
		if *approve {
			if err := provision.Approve(ctx, h, r); err != nil {
				return withHint(err, "remove or fix the refused entries of provision/packages in .corral.toml, then review again")
			}
			if r, err = provision.Review(ctx, h, box, req); err != nil {
				return err
			}
		}
		if *jsonOut {
			// The man page promises arrays: an empty list is [], never null.
			if r.Scripts == nil {
				r.Scripts = []provision.ScriptReview{}
			}
			if r.Packages == nil {
				r.Packages = []provision.PackageReview{}
			}
			return a.printJSON(r)
		}
		provision.FormatReview(a.stdout, r)
		if *approve {
			fmt.Fprintf(a.stdout, "\napproved %d provision scripts and %d packages for box %s\n", len(r.Scripts), len(r.Packages), box)
		} else if n := len(r.Pending()); n > 0 {
			fmt.Fprintf(a.stdout, "\n%d entries await approval: read them above, then run 'git corral review --approve'\n", n)
		}
		return nil
	}
}

// provisionContext finds the repository, the home, the box and the effective configuration,
// loaded as start loads it.
func (a *app) provisionContext(ctx context.Context) (*project.Project, home.Home, string, *policy.Config, error) {
	p, err := a.project(ctx)
	if err != nil {
		return nil, home.Home{}, "", nil, err
	}
	opts, err := a.loadOptions(ctx, "")
	if err != nil {
		return nil, home.Home{}, "", nil, err
	}
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return nil, home.Home{}, "", nil, err
	}
	box := p.Box // name, when set; --box wins, as for every command
	if a.box != "" {
		box = a.box
	}
	return p, opts.Home, box, eff.Config, nil
}
