package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/vm"
)

// storedAgents lists the agent versions in home's store that pass the quick check and are
// built for guests of arch: what a host without the npm registry can run.
func storedAgents(home, arch string) ([]string, error) {
	plat, err := agents.PlatformForArch(arch)
	if err != nil {
		return nil, err
	}
	list, err := agents.Open(home, agents.Options{Platform: plat}).Installed()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, i := range list {
		if i.Problem == "" && i.Platform == plat {
			out = append(out, i.Name+"@"+i.Version)
		}
	}
	return out, nil
}

type doctorDoc struct {
	OK     bool       `json:"ok"`
	Checks []vm.Check `json:"checks"`
}

func defineDoctor(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("doctor", "doctor takes no arguments")
		}
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return err
		}
		checks := vm.Doctor(ctx, vm.DoctorEnv{Getenv: a.getenv, ImageDir: h.Images(), Home: h.Dir, Agents: func() ([]string, error) {
			return storedAgents(h.Dir, runtime.GOARCH)
		}})
		doc := doctorDoc{OK: true, Checks: checks}
		for _, c := range checks {
			if c.Status == vm.CheckFail {
				doc.OK = false
			}
		}
		if *jsonOut {
			if err := a.printJSON(doc); err != nil {
				return err
			}
		} else {
			for _, c := range checks {
				fmt.Fprintf(a.stdout, "%-5s %-12s %s\n", c.Status, c.Name, visible.String(c.Detail))
				if c.Fix != "" && c.Status != vm.CheckOK {
					fmt.Fprintf(a.stdout, "      %-12s fix: %s\n", "", c.Fix)
				}
			}
		}
		if !doc.OK {
			return withCode(exitFailure, errors.New("some prerequisites are missing"), "apply each fix above, then run 'git corral doctor' again")
		}
		return nil
	}
}
