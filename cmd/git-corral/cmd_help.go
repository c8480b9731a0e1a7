package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/docs/man"
)

func defineHelp(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, args []string) error {
		switch len(args) {
		case 0:
			return a.printSummary(a.stdout)
		case 1:
			if lookup(args[0]) == nil {
				return usageErrorf("", "%q is not a git corral command", args[0])
			}
			return printCommandHelp(a.stdout, args[0])
		}
		return usageErrorf("help", "help takes at most one command, got %d", len(args))
	}
}

// printSummary lists the commands, one line each.
func (a *app) printSummary(w io.Writer) error {
	fmt.Fprintln(w, "usage: git corral [-C DIR] [--box NAME] COMMAND [OPTIONS] [ARGS]")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, g := range groupOrder {
		fmt.Fprintf(tw, "%s\n", g)
		for _, c := range commands() {
			if c.group == g {
				fmt.Fprintf(tw, "   %s\t%s\n", c.name, c.summary)
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w, "'git corral COMMAND -h' shows a command's usage; 'git help corral' opens the manual.")
	return nil
}

// printShortHelp prints what -h shows: the command's synopsis and first paragraph from its
// man page section, then its flags, and where the whole section is. --help and
// 'git corral help CMD' print the section itself (printCommandHelp).
func printShortHelp(w io.Writer, cmd *command) error {
	sec := man.Section(cmd.name)
	if sec == "" {
		return fmt.Errorf("no manual section for %q (this is a bug in git corral)", cmd.name)
	}
	paras := strings.SplitN(sec, "\n\n", 3)
	fmt.Fprintf(w, "usage: %s\n", strings.TrimSpace(man.Plain(paras[0])))
	if len(paras) > 1 {
		fmt.Fprintf(w, "\n%s", man.Plain(paras[1]))
	}
	fs := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
	cmd.define(fs)
	fs.BoolP("help", "h", false, "this usage; --help shows the manual section")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fs.VisitAll(func(f *pflag.Flag) {
		name := "    --" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", --" + f.Name
		}
		arg, usage := pflag.UnquoteUsage(f)
		if f.Value.Type() == "bool" {
			arg = ""
		}
		fmt.Fprintf(tw, "  %s %s\t%s\n", name, arg, usage)
	})
	tw.Flush()
	fmt.Fprintf(w, "\n'git corral help %s' (or --help) shows the whole manual section.\n", cmd.name)
	return nil
}

// printCommandHelp prints a command's section of the manual page.
func printCommandHelp(w io.Writer, name string) error {
	sec := man.Section(name)
	if sec == "" {
		return fmt.Errorf("no manual section for %q (this is a bug in git corral)", name)
	}
	_, err := io.WriteString(w, man.Plain(sec))
	return err
}
