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
	// group is the heading help lists the command under.
	group string
	// usesBox says the command acts on the box named by the global --box; the others refuse
	// it rather than ignore it.
	usesBox bool
	// stopAtFirstArg stops flag parsing at the first operand, so that a guest command's own
	// flags (run -- ls -la) reach it untouched.
	stopAtFirstArg bool
}

// The groups of commands, in the order help lists them.
const (
	groupDaily       = "daily"
	groupClone       = "untrusted repositories (clone mode)"
	groupReview      = "review and audit"
	groupMaintenance = "boxes and maintenance"
	groupPlumbing    = "plumbing (what other commands run)"
)

var groupOrder = []string{groupDaily, groupClone, groupReview, groupMaintenance, groupPlumbing}

// commands returns the one explicit table of subcommands, in the order help lists them. It is a
// function rather than a variable because completion and help refer back to it.
func commands() []*command {
	return []*command{
		{name: "start", group: groupDaily, summary: "boot this repository's box and run the agent (or a shell) in it", define: defineStart, stopAtFirstArg: true},
		{name: "run", group: groupDaily, summary: "run one command in the box", define: defineRun, stopAtFirstArg: true},
		{name: "shell", group: groupDaily, summary: "open a login shell in the box, in the project directory", define: defineShell},
		{name: "config", group: groupDaily, usesBox: true, summary: "show the effective configuration, check it, or print a template", define: defineConfig, verbs: []string{"check", "init"}},

		{name: "clone", group: groupClone, summary: "fetch an untrusted repository into a store and check it out only in a box", define: defineClone},
		{name: "fetch", group: groupClone, summary: "bring the box's branches back as refs/corral/<box>/…, nothing checked out", define: defineFetch},

		{name: "diff", group: groupDaily, usesBox: true, summary: "show what the box changed in files the host will execute", define: defineDiff},

		{name: "shadow", group: groupReview, summary: "show which git metadata the box shadows and the host guards", define: defineShadow},

		{name: "stop", group: groupDaily, usesBox: true, summary: "stop this repository's box (or every box)", define: defineStop},
		{name: "delete", group: groupMaintenance, usesBox: true, summary: "delete this repository's box", define: defineDelete},
		{name: "list", group: groupMaintenance, summary: "list the boxes, their state and template drift", define: defineList},
		{name: "logs", group: groupMaintenance, usesBox: true, summary: "show Lima's logs of this repository's box", define: defineLogs},
		{name: "doctor", group: groupMaintenance, summary: "check every host prerequisite of a box and print the fix", define: defineDoctor},
		{name: "image", group: groupMaintenance, summary: "build, list and prune the local base images", define: defineImage, verbs: imageVerbs},
		{name: "golden", group: groupMaintenance, summary: "list, build, verify and prune the golden bases new boxes start from", define: defineGolden, verbs: goldenVerbs},
		{name: "snapshot", group: groupMaintenance, usesBox: true, summary: "create, list, restore or delete snapshots of the stopped box", define: defineSnapshot, verbs: snapshotVerbs},
		{name: "undo", group: groupMaintenance, usesBox: true, summary: "restore the stopped box to its newest snapshot", define: defineUndo},
		{name: "gc", group: groupMaintenance, summary: "stop boxes idle longer than idle_stop", define: defineGC},
		{name: "status", group: groupDaily, usesBox: true, summary: "show whether this repository's box exists and runs, its broker, guards, sessions and denials", define: defineStatus},
		{name: "ports", group: groupDaily, usesBox: true, summary: "list the ports forwarded from the host's 127.0.0.1 into the box", define: definePorts},
		{name: "info", group: groupDaily, summary: "show the repository, its box and what applies to it", define: defineInfo},
		{name: "dashboard", group: groupDaily, summary: "a terminal UI of every box: state, mode, sessions, egress denials", define: defineDashboard},
		{name: "audit", group: groupReview, usesBox: true, summary: "show the audit log of sessions and guards", define: defineAudit},
		{name: "report", group: groupReview, usesBox: true, summary: "write a session's record as one JSON document, signed with an SSH key on request; verify one", define: defineReport},

		{name: "agents", group: groupMaintenance, usesBox: true, summary: "list the agent catalogue and the host's verified agent store; install, update, verify, log out", define: defineAgents, verbs: agentsVerbs},

		{name: "egress", group: groupReview, usesBox: true, summary: "show what the box's broker allowed and refused", define: defineEgress},
		{name: "ssh-config", group: groupDaily, summary: "print (or --install) an ssh_config entry per box whose connection goes through the guards", define: defineSSHConfig},
		{name: "code", group: groupDaily, summary: "open VS Code Remote-SSH on this repository's box, through the guards", define: defineCode},
		{name: "ssh-proxy", group: groupPlumbing, usesBox: true, summary: "check the box's guards, audit, then relay an ssh connection (ssh-config's ProxyCommand)", define: defineSSHProxy},
		{name: "connection", group: groupPlumbing, usesBox: true, summary: "hold a box's SSH connection open for later commands (what run starts)", define: defineConnection, verbs: []string{"serve"}},
		{name: "watch", group: groupPlumbing, usesBox: true, summary: "stop the box after its last session (stop_on_exit) or idle_stop (what run starts)", define: defineWatch},
		{name: "broker", group: groupPlumbing, usesBox: true, summary: "run a box's egress broker in the foreground (what start runs)", define: defineBroker, verbs: []string{"serve"}},

		{name: "sandbox", group: groupDaily, summary: "run a command in the light tier: bubblewrap, Landlock, seccomp and limits, no VM", define: defineSandbox, stopAtFirstArg: true},
		{name: "review", group: groupReview, usesBox: true, summary: "show the repository's provision scripts and packages; approve them", define: defineReview},
		{name: "provision", group: groupReview, usesBox: true, summary: "write the guest scripts this repository's box would get", define: defineProvision, verbs: []string{"render"}},
		{name: "version", group: groupMaintenance, summary: "show the versions of git corral, Go and Lima", define: defineVersion},
		{name: "completion", group: groupPlumbing, summary: "print a shell completion script (bash, zsh, fish)", define: defineCompletion, verbs: []string{"bash", "zsh", "fish"}},
		{name: "help", group: groupMaintenance, summary: "show help for a command", define: defineHelp},
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
