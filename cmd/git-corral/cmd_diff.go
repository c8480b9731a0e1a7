package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/diff"
	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
)

// quietExit ends the command with a status and no message: diff --exit-code reports findings
// on stdout already. It uses the same path as a guest command's status.
type quietExit int

func (q quietExit) Error() string    { return fmt.Sprintf("exit status %d", int(q)) }
func (q quietExit) GuestStatus() int { return int(q) }

func defineDiff(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	exitCode := fs.Bool("exit-code", false, "exit 1 when there are findings")
	all := fs.Bool("all", false, "list every ordinary change with its diff")
	record := fs.Bool("record", false, "record a session base now and print its path")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 1 {
			return usageErrorf("diff", "diff takes at most one BASE revision, got %d arguments", len(args))
		}
		if *record && len(args) > 0 {
			return usageErrorf("diff", "--record takes no BASE")
		}
		if ok, err := a.cloneDiff(ctx, args, *record, *jsonOut, *exitCode); ok { // clonediff.go
			return err
		}
		p, err := a.project(ctx)
		if err != nil {
			return err
		}
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return err
		}
		box := p.Box
		if a.box != "" {
			box = a.box
		}
		if *record {
			return a.diffRecord(ctx, p, box, h, *jsonOut)
		}
		o := diff.Options{Box: box, Home: h.Dir, All: *all}
		if o.ConfigPaths, err = configPaths(ctx, p); err != nil {
			return err
		}
		if len(args) == 1 {
			o.Base = args[0]
		}
		r, err := diff.Compare(ctx, p, o)
		if errors.Is(err, diff.ErrNoBase) {
			return withHint(err, "'git corral start' records one; record one now with 'git corral diff --record', or compare with a revision: 'git corral diff HEAD'")
		}
		if err != nil {
			return err
		}
		if r.Notice != "" {
			a.notice(r.Notice)
		}
		if *jsonOut {
			err = a.printJSON(r.Escaped())
		} else {
			err = diff.WriteText(a.stdout, r, diff.TextOptions{All: *all, Color: a.colorOn(a.stdout)})
		}
		if err != nil {
			return err
		}
		if *exitCode && len(r.Findings) > 0 {
			return quietExit(exitFailure)
		}
		return nil
	}
}

// diffRecord records a session base of p for box now and prints where it is kept.
func (a *app) diffRecord(ctx context.Context, p *project.Project, box string, h home.Home, jsonOut bool) error {
	rec, err := diff.Record(ctx, p, box, diff.BaseOptions{Home: h.Dir})
	if err != nil {
		return err
	}
	if rec.Notice != "" {
		a.notice(rec.Notice)
	}
	if jsonOut {
		return a.printJSON(map[string]string{"path": rec.Path})
	}
	_, err = fmt.Fprintln(a.stdout, rec.Path)
	return err
}

// configPaths are the work-tree paths the host's git config names, which diff treats as
// host-executed (gitshadow's plan).
func configPaths(ctx context.Context, p *project.Project) ([]diff.ConfigPath, error) {
	plan, err := gitshadow.Discover(ctx, p)
	if err != nil {
		return nil, err
	}
	var out []diff.ConfigPath
	for _, d := range plan.DiffPaths() {
		out = append(out, diff.ConfigPath(d))
	}
	return out, nil
}
