package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/go-git/go-git/v5"
	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/project"
)

type infoDoc struct {
	Box            string               `json:"box"`
	TopLevel       string               `json:"topLevel"`
	GitDir         string               `json:"gitDir"`
	CommonDir      string               `json:"commonDir"`
	LinkedWorktree bool                 `json:"linkedWorktree"`
	Head           string               `json:"head"`
	ConfigFiles    []project.ConfigFile `json:"configFiles"`
}

func defineInfo(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("info", "info takes no arguments")
		}
		p, err := a.project(ctx)
		if err != nil {
			return err
		}
		doc := infoDoc{Box: p.Box, TopLevel: p.TopLevel, GitDir: p.GitDir, CommonDir: p.CommonDir, LinkedWorktree: p.Linked()}
		if doc.ConfigFiles, err = p.ConfigFiles(ctx); err != nil {
			return err
		}
		doc.Head = headName(p)
		if *jsonOut {
			return a.printJSON(doc)
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "box:\t%s\n", doc.Box)
		fmt.Fprintf(tw, "top level:\t%s\n", visible.String(doc.TopLevel))
		fmt.Fprintf(tw, "git dir:\t%s\n", visible.String(doc.GitDir))
		fmt.Fprintf(tw, "common dir:\t%s\n", visible.String(doc.CommonDir))
		fmt.Fprintf(tw, "linked worktree:\t%v\n", doc.LinkedWorktree)
		fmt.Fprintf(tw, "head:\t%s\n", visible.String(doc.Head))
		tw.Flush()
		fmt.Fprintln(a.stdout, "git config files:")
		for _, f := range doc.ConfigFiles {
			fmt.Fprintf(a.stdout, "  %-8s %s\n", f.Scope, visible.String(f.Path))
		}
		return nil
	}
}

// headName opens the repository with go-git from what git reported and names HEAD: the branch,
// or the commit when detached, or "" when it cannot be read (an unborn branch, say).
func headName(p *project.Project) string {
	repo, err := git.PlainOpenWithOptions(p.TopLevel, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return ""
	}
	ref, err := repo.Head()
	if err != nil {
		return ""
	}
	if ref.Name().IsBranch() {
		return ref.Name().Short()
	}
	return ref.Hash().String()
}
