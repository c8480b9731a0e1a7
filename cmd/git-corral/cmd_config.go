package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/session"
)

// configDoc is `git corral config --json`.
type configDoc struct {
	Box      string           `json:"box"`
	TopLevel string           `json:"topLevel"`
	Settings []policy.Setting `json:"settings"`
}

// checkDoc is `git corral config check --json`.
type checkDoc struct {
	Clean      bool               `json:"clean"`
	Files      []string           `json:"files"`
	Violations []policy.Violation `json:"violations"`
	// Refused is what a session would refuse for a configuration that loads (session.Preview:
	// a project or mounts entry the mount guard refuses, hide or box_dirs the host refuses).
	Refused *refusal `json:"refused"`
}

func defineConfig(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	host := fs.Bool("host", false, "config init: the template of a trusted file")
	return func(ctx context.Context, a *app, args []string) error {
		verb := ""
		if len(args) > 0 {
			verb, args = args[0], args[1:]
		}
		if *host && verb != "init" {
			return usageErrorf("config", "--host is only for 'config init'")
		}
		switch verb {
		case "":
			return a.configShow(ctx, *jsonOut)
		case "check":
			if len(args) > 1 {
				return usageErrorf("config", "config check takes at most one FILE")
			}
			return a.configCheck(ctx, *jsonOut, args)
		case "init":
			if len(args) > 0 || *jsonOut {
				return usageErrorf("config", "config init takes no arguments and no --json")
			}
			_, err := fmt.Fprint(a.stdout, policy.Template(*host))
			return err
		}
		return usageErrorf("config", "%q is not a config verb (check, init)", verb)
	}
}

// loadOptions finds the repository (optional when file is given) and the home.
func (a *app) loadOptions(ctx context.Context, file string) (policy.LoadOptions, error) {
	opts, _, err := a.loadOptionsProject(ctx, file)
	return opts, err
}

// loadOptionsProject is loadOptions that also returns the repository, nil when file is given
// outside one.
func (a *app) loadOptionsProject(ctx context.Context, file string) (policy.LoadOptions, *project.Project, error) {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return policy.LoadOptions{}, nil, err
	}
	opts := policy.LoadOptions{Home: h, AgentHosts: session.AgentAPIHosts}
	p, err := a.findProject(ctx) // the per-project layer is the derived box's file, as start reads it
	switch {
	case err == nil:
		opts.TopLevel, opts.Box = p.TopLevel, p.Box
	case file != "" && errors.Is(err, project.ErrNotRepository):
		p = nil
	default:
		return opts, nil, err
	}
	if a.box != "" {
		opts.Box = a.box
	}
	if file != "" {
		dir, err := a.workDir()
		if err != nil {
			return opts, nil, err
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		opts.ProjectFile = file
	}
	return opts, p, nil
}

// projectConfig is the effective configuration of p's box, with no flag layer.
func (a *app) projectConfig(ctx context.Context, p *project.Project) (*policy.Config, error) {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return nil, err
	}
	return session.LoadConfig(ctx, session.Request{}, policy.LoadOptions{Home: h, TopLevel: p.TopLevel, Box: project.BoxName(p.TopLevel)})
}

// configShow prints the effective configuration with the origin of every value.
func (a *app) configShow(ctx context.Context, jsonOut bool) error {
	opts, err := a.loadOptions(ctx, "")
	if err != nil {
		return err
	}
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return withHint(err, "run 'git corral config check' for the same list, or fix the files named above")
	}
	doc := configDoc{Box: opts.Box, TopLevel: opts.TopLevel, Settings: eff.Settings()}
	if jsonOut {
		return a.printJSON(doc)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, s := range doc.Settings {
		if vals, ok := s.Value.([]string); ok {
			if len(vals) == 0 {
				fmt.Fprintf(tw, "%s\t[]\t# default\n", s.Key)
			}
			for i, v := range vals {
				fmt.Fprintf(tw, "%s[%d]\t%q\t# %s\n", s.Key, i, v, visible.String(s.Origins[i]))
			}
			continue
		}
		val := fmt.Sprint(s.Value)
		if str, ok := s.Value.(string); ok {
			val = fmt.Sprintf("%q", str)
		}
		fmt.Fprintf(tw, "%s\t%s\t# %s\n", visible.String(s.Key), val, visible.String(s.Origin))
	}
	return tw.Flush()
}

// configCheck loads as for this repository (file as the repository layer when given) and
// reports every violation, or else what a session would refuse of the configuration that
// loaded (session.Preview, the session's own guards, its error and hint as they are); exit 1
// when there is either.
func (a *app) configCheck(ctx context.Context, jsonOut bool, args []string) error {
	file := ""
	if len(args) == 1 {
		file = args[0]
	}
	opts, p, err := a.loadOptionsProject(ctx, file)
	if err != nil {
		return err
	}
	doc := checkDoc{Files: checkedFiles(opts), Violations: []policy.Violation{}}
	eff, err := policy.Load(ctx, opts)
	var vs *policy.Violations
	var refused error
	switch {
	case errors.As(err, &vs):
		doc.Violations = vs.List
	case err != nil:
		return err
	default:
		refused = session.Preview(ctx, opts.Home, p, eff.Config, a.getenv)
		doc.Clean, doc.Refused = refused == nil, refusalOf(refused)
	}
	if jsonOut {
		if err := a.printJSON(doc); err != nil {
			return err
		}
	} else if doc.Clean {
		fmt.Fprintf(a.stdout, "configuration is clean: %s\n", visible.String(strings.Join(doc.Files, ", ")))
	}
	switch {
	case refused != nil:
		return refused
	case !doc.Clean:
		return withHint(vs, "move each setting to the file named, or remove it; 'git corral config init' prints every key the repository may set")
	}
	return nil
}

// checkedFiles lists the files a load reads, in layer order.
func checkedFiles(o policy.LoadOptions) []string {
	files := []string{o.Home.GlobalConfig()}
	switch {
	case o.ProjectFile != "":
		files = append(files, o.ProjectFile)
	case o.TopLevel != "":
		files = append(files, filepath.Join(o.TopLevel, policy.RepoFile))
	}
	if o.Box != "" {
		files = append(files, o.Home.ProjectConfig(o.Box))
	}
	return files
}
