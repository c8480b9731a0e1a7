package main

import (
	"context"
	"io"
	"sort"

	"github.com/git-corral/git-corral/internal/shellquote"
	"github.com/spf13/pflag"
)

// Completion rules (issue #21):
//   - one model (compModel) built from the command table feeds the bash, zsh and fish scripts, so
//     a new command, flag or verb is completed in every shell without touching this file;
//   - values are completed where they are cheap and local: network modes, box names (the
//     $CORRAL_HOME/boxes/*.json names, no VM and no git corral process), directories, files and,
//     for diff's BASE, the repository's refs;
//   - each script is written for where its shell looks: bash's git completion calls
//     _git_corral, zsh's _git calls the autoloaded _git-corral, fish completes the git-corral
//     command and a one-line hook joins it to git's own fish completion.

// networkModes are the values --network takes.
var networkModes = []string{"full", "broker", "offline"}

// The kinds of value a flag takes, for completion.
const (
	valueNone    = ""        // a boolean flag
	valueFree    = "free"    // any text: nothing to offer
	valueNetwork = "network" // one of networkModes
	valueBox     = "box"     // a box name
	valueDir     = "dir"     // a directory
	valueFile    = "file"    // a file
)

// valueKinds says what the value of a flag is, by flag name; unnamed value flags are free text.
var valueKinds = map[string]string{
	"network": valueNetwork, "box": valueBox, "C": valueDir, "dir": valueDir, "out": valueDir,
	"manifest": valueFile, "secret-file": valueFile, "log": valueFile, "api-routes": valueFile,
}

// revisionArg names the commands whose one operand is a revision of the repository.
var revisionArg = map[string]bool{"diff": true}

// compFlag is one long flag of a command and the kind of value it takes.
type compFlag struct {
	name  string
	value string
}

// compCommand is what completion knows of one command.
type compCommand struct {
	name, summary string
	verbs         []string
	flags         []compFlag
	revision      bool
}

// globalFlags are the flags dispatch reads before the command name.
var globalFlags = []compFlag{{"C", valueDir}, {"box", valueBox}, {"help", valueNone}, {"version", valueNone}}

// compModel returns the completion model of every command in the table, in table order.
func compModel() []compCommand {
	var out []compCommand
	for _, c := range commands() {
		fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
		c.define(fs)
		cc := compCommand{name: c.name, summary: c.summary, verbs: c.verbs, revision: revisionArg[c.name]}
		fs.VisitAll(func(f *pflag.Flag) {
			kind := valueNone
			if f.Value.Type() != "bool" {
				kind = valueFree
				if k, ok := valueKinds[f.Name]; ok {
					kind = k
				}
			}
			cc.flags = append(cc.flags, compFlag{f.Name, kind})
		})
		cc.flags = append(cc.flags, compFlag{"help", valueNone})
		out = append(out, cc)
	}
	return out
}

// valueFlagsByKind returns, for each value kind, the sorted names of the flags (global or of any
// command) that take it; a boolean flag is never listed.
func valueFlagsByKind(model []compCommand) map[string][]string {
	seen := map[string]string{}
	add := func(f compFlag) {
		if f.value != valueNone {
			seen[f.name] = f.value
		}
	}
	for _, f := range globalFlags {
		add(f)
	}
	for _, c := range model {
		for _, f := range c.flags {
			add(f)
		}
	}
	byKind := map[string][]string{}
	for name, kind := range seen {
		byKind[kind] = append(byKind[kind], dashed(name))
	}
	for _, names := range byKind {
		sort.Strings(names)
	}
	return byKind
}

// dashed returns the flag as typed: -C for one letter, --name otherwise.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// commandNames returns the names of the commands in table order.
func commandNames(model []compCommand) []string {
	var names []string
	for _, c := range model {
		names = append(names, c.name)
	}
	return names
}

func defineCompletion(fs *pflag.FlagSet) runFunc {
	gitHook := fs.Bool("git-hook", false, "fish only: print the line that joins git-corral's completion to git's (for fish's conf.d)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) != 1 {
			return usageErrorf("completion", "completion takes one shell name: bash, zsh or fish")
		}
		if *gitHook && args[0] != "fish" {
			return usageErrorf("completion", "--git-hook is for fish only, not %q", args[0])
		}
		write := map[string]func(io.Writer) error{
			"bash": writeBashCompletion, "zsh": writeZshCompletion, "fish": writeFishCompletion,
		}[args[0]]
		if write == nil {
			return usageErrorf("completion", "unknown shell %q (want bash, zsh or fish)", args[0])
		}
		if *gitHook {
			write = writeFishGitHook
		}
		return write(a.stdout)
	}
}

// shellQuote single-quotes s for sh, zsh and fish.
func shellQuote(s string) string { return shellquote.Path(s) }
