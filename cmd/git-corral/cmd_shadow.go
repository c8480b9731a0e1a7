package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/internal/visible"
)

func defineShadow(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	script := fs.Bool("script", false, "print the guest script that applies the shadow")
	guard := fs.Bool("guard", false, "print the guard check that verifies it in the guest")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("shadow", "shadow takes no arguments")
		}
		if countTrue(*jsonOut, *script, *guard) > 1 {
			return usageErrorf("shadow", "--json, --script and --guard are exclusive")
		}
		p, err := a.project(ctx)
		if err != nil {
			return err
		}
		plan, err := gitshadow.Discover(ctx, p)
		if err != nil {
			return err
		}
		switch {
		case *jsonOut:
			return a.printJSON(plan)
		case *script:
			return printScript(a, plan.GuestScript)
		case *guard:
			return printScript(a, plan.GuardChecks)
		}
		printPlan(a, plan)
		return nil
	}
}

// countTrue counts the set flags among bs.
func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// printScript prints a rendered script, or the error that refused to render it.
func printScript(a *app, render func() (string, error)) error {
	s, err := render()
	if err != nil {
		return withHint(fmt.Errorf("render shadow script: %w", err), "rename the path named above; git corral refuses to put it into a shell script")
	}
	_, err = fmt.Fprint(a.stdout, s)
	return err
}

// printPlan prints the plan for a human: each git dir with its shadows, then the rest.
func printPlan(a *app, plan *gitshadow.Plan) {
	w := a.stdout
	for _, g := range plan.GitDirs {
		fmt.Fprintf(w, "%s %s\n", g.Role, visible.String(g.Path))
		for _, s := range g.Shadows {
			fmt.Fprintf(w, "  %-8s %s\n", s.Kind, visible.String(s.Path))
		}
	}
	if len(plan.Extra) > 0 {
		fmt.Fprintln(w, "entry points outside git dirs")
		for _, s := range plan.Extra {
			fmt.Fprintf(w, "  %-8s %s\n", s.Kind, visible.String(s.Path))
		}
	}
	if len(plan.ConfigRefs) > 0 {
		fmt.Fprintln(w, "named by the host's git config")
		for _, r := range plan.ConfigRefs {
			fmt.Fprintf(w, "  %s: %s\n", visible.String(r.Path), visible.String(r.Reason()))
		}
	}
	for _, d := range plan.OutsideTopLevel {
		fmt.Fprintf(w, "outside the top level (the box must mount it): %s\n", visible.String(d))
	}
	for _, warn := range plan.Warnings {
		fmt.Fprintf(a.stderr, "corral: warning: %s\n", visible.String(warn))
	}
}
