package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/session"
	"github.com/git-corral/git-corral/vm"
)

// goldenVerbs are the verbs of git corral golden.
var goldenVerbs = []string{"list", "build", "prune", "verify"}

func defineGolden(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		verb := "list"
		if len(args) > 1 {
			return usageErrorf("golden", "golden takes one verb: list, build, prune or verify")
		}
		if len(args) == 1 {
			verb = args[0]
		}
		switch verb {
		case "list", "build", "prune", "verify":
		default:
			return usageErrorf("golden", "unknown golden verb %q (list, build, prune or verify)", verb)
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		switch verb {
		case "list":
			return a.goldenList(m, *jsonOut)
		case "build":
			return a.goldenBuild(ctx, m, *jsonOut)
		case "prune":
			gone, err := m.PruneGoldens()
			if *jsonOut {
				if gone == nil {
					gone = []string{}
				}
				if jerr := a.printJSON(map[string][]string{"removed": gone}); jerr != nil {
					return jerr
				}
			} else {
				for _, g := range gone {
					fmt.Fprintf(a.stdout, "removed golden base %s\n", g)
				}
			}
			return err
		case "verify":
			return a.goldenVerify(ctx, m)
		}
		return usageErrorf("golden", "unknown golden verb %q (list, build, prune or verify)", verb)
	}
}

// goldenList prints the golden bases and the boxes that use them.
func (a *app) goldenList(m *vm.Manager, jsonOut bool) error {
	gs, err := m.Goldens()
	if err != nil {
		return err
	}
	if jsonOut {
		if gs == nil {
			gs = []vm.Golden{}
		}
		for i := range gs {
			if gs[i].Users == nil {
				gs[i].Users = []string{}
			}
		}
		return a.printJSON(map[string][]vm.Golden{"goldens": gs})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSIZE\tSTATE\tBUILT\tBUILD\tBOXES")
	for _, g := range gs {
		state := "-"
		if g.HasState() {
			state = fmt.Sprintf("%dMiB", g.StateBytes>>20)
		}
		fmt.Fprintf(tw, "%s\t%dMiB\t%s\t%s\t%.0fs\t%s\n", g.Key, g.Bytes>>20, state, g.Built.Format("2006-01-02 15:04"), g.BuildSeconds, strings.Join(g.Users, ","))
	}
	return tw.Flush()
}

// goldenBuild builds (or finds) the golden base of this repository's guest recipe.
func (a *app) goldenBuild(ctx context.Context, m *vm.Manager, jsonOut bool) error {
	p, err := a.project(ctx)
	if err != nil {
		return err
	}
	cfg, err := a.projectConfig(ctx, p)
	if err != nil {
		return err
	}
	meta, _ := m.ReadMeta(p.Box)
	_, bundle, err := session.RenderGuest(ctx, p, m.Home, p.Box, cfg, meta.BrokerPort)
	if err != nil {
		return err
	}
	spec := vm.BoxSpec{Box: p.Box, ProjectDir: p.TopLevel, Config: cfg, Bundle: bundle,
		Progress: a.progress(), Notice: a.notice, Agents: session.AgentMountSet(m.Home, p.Box, cfg.AgentState, a.getenv("HOME"))}
	r, err := m.RenderBox(ctx, spec, false)
	if errors.Is(err, vm.ErrNoImage) {
		return withHint(err, "build it once as root: 'sudo git corral image build --dir "+vm.SystemImageDir+"'")
	}
	if err != nil {
		return err
	}
	m.DecideTCG(ctx, r.Image, a.notice)
	spec.BrokerPort = meta.BrokerPort
	g, err := m.EnsureGolden(ctx, spec, vm.GoldenKey(r.Image, cfg, spec.Bundle, spec.GoldenBox(r)))
	spec.Progress.Done("golden base", err)
	if err != nil {
		return withHint(err, "'git corral logs' shows what Lima said")
	}
	if jsonOut {
		return a.printJSON(g)
	}
	fmt.Fprintf(a.stdout, "%s\n", g.DiskPath())
	return nil
}

// goldenVerify re-hashes every golden base and fails if one changed since it was built.
func (a *app) goldenVerify(ctx context.Context, m *vm.Manager) error {
	gs, err := m.Goldens()
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range gs {
		if err := vm.VerifyGolden(ctx, g); err != nil {
			errs = append(errs, err)
			continue
		}
		if g.HasState() {
			fmt.Fprintf(a.stdout, "golden base %s: unchanged (sha256 %s, state %s)\n", g.Key, g.SHA256, g.StateSHA256)
			continue
		}
		fmt.Fprintf(a.stdout, "golden base %s: unchanged (sha256 %s)\n", g.Key, g.SHA256)
	}
	if err := errors.Join(errs...); err != nil {
		return withHint(err, "delete the boxes made from it and run 'git corral golden prune'; boxes made from a changed base are not trustworthy")
	}
	return nil
}
