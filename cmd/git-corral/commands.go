package main

import (
	"context"

	"github.com/spf13/pflag"
)

// runFunc runs a command once its flags are parsed; args are the remaining operands.
type runFunc func(ctx context.Context, a *app, args []string) error

// command is one entry of the command table.
type command struct {
	name    string
	summary string
	// define registers the command's flags on fs and returns the function that runs it. It is
	// also called on a throwaway flag set to list flags for help tests and completion.
	define func(fs *pflag.FlagSet) runFunc
	// verbs are the command's own sub-verbs (config check, image build…), for completion.
	verbs []string
	// stopAtFirstArg stops flag parsing at the first operand, so that a guest command's own
	// flags (run -- ls -la) reach it untouched.
	stopAtFirstArg bool
}

// commands returns the one explicit table of subcommands, in the order help lists them. It is a
// function rather than a variable because completion and help refer back to it.
func commands() []*command {
	return []*command{
		{name: "start", summary: "boot this repository's box and run the agent (or a shell) in it", define: defineStart, stopAtFirstArg: true},
		{name: "run", summary: "run one command in the box", define: defineRun, stopAtFirstArg: true},
		{name: "shell", summary: "open a login shell in the box, in the project directory", define: defineShell},
		{name: "info", summary: "show the repository, its box and what applies to it", define: defineInfo},
		{name: "review", summary: "show the repository's provision scripts and packages; approve them", define: defineReview},
		{name: "provision", summary: "write the guest scripts this repository's box would get", define: defineProvision, verbs: []string{"render"}},
		{name: "version", summary: "show the versions of git corral, Go and Lima", define: defineVersion},
		{name: "completion", summary: "print a shell completion script (bash, zsh, fish)", define: defineCompletion, verbs: []string{"bash", "zsh", "fish"}},
		{name: "help", summary: "show help for a command", define: defineHelp},
	}
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// flagNames returns the long names of cmd's flags (without --help), in definition order.
func flagNames(cmd *command) []string {
	fs := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
	cmd.define(fs)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}
