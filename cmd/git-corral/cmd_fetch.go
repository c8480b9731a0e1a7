package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/project"
)

type fetchDoc struct {
	Box      string          `json:"box"`
	GitDir   string          `json:"gitDir"`
	Refs     []clone.Ref     `json:"refs"`
	Removed  []string        `json:"removed"`
	Warnings []clone.Finding `json:"warnings"`
}

func defineFetch(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("fetch", "fetch takes no arguments")
		}
		box, hostDir, gitDir, err := fetchTarget(ctx, a)
		if err != nil {
			return err
		}
		gb, err := boxGuest(ctx, a, guestRequest{Cmd: "fetch", Box: box, HostDir: hostDir})
		if err != nil {
			return withHint(fmt.Errorf("fetch from box %s: %w", box, err), "nothing was fetched")
		}
		res, err := clone.FetchBack(ctx, gb, gitDir, clone.FetchBackOptions{Dir: gb.Dir, Box: box})
		if err != nil {
			return withHint(err, "nothing was written on the host")
		}
		doc := fetchDoc{Box: box, GitDir: gitDir, Refs: res.Refs, Removed: res.Removed, Warnings: res.Warnings}
		if *jsonOut {
			return a.printJSON(doc)
		}
		for _, r := range doc.Refs {
			fmt.Fprintf(a.stdout, "%s %s\n", r.Hash[:12], visible.String(r.Name))
		}
		for _, r := range doc.Removed {
			fmt.Fprintf(a.stdout, "removed %s\n", visible.String(r))
		}
		for _, w := range doc.Warnings {
			fmt.Fprintf(a.stderr, "corral: warning: %s\n", w)
		}
		return nil
	}
}

// fetchTarget finds where the box's branches land: a clone directory's store, or else the
// checkout's own common git dir (source = "clone" for an existing checkout). The box and store
// are derived from real paths, never read from the clone record.
func fetchTarget(ctx context.Context, a *app) (box, hostDir, gitDir string, err error) {
	dir, err := a.workDir()
	if err != nil {
		return "", "", "", err
	}
	if cdir, _, rerr := clone.FindRecord(dir); rerr == nil {
		real, err := filepath.EvalSymlinks(cdir)
		if err != nil {
			return "", "", "", err
		}
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return "", "", "", err
		}
		box = project.BoxName(real)
		return box, real, h.CloneStore(box), nil
	} else if !errors.Is(rerr, clone.ErrNoRecord) {
		return "", "", "", rerr
	}
	p, err := a.project(ctx)
	if err != nil {
		return "", "", "", err
	}
	return p.Box, p.TopLevel, p.CommonDir, nil
}
