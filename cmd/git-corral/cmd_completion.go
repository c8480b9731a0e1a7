package main

import (
	"context"
	"fmt"
	"github.com/git-corral/git-corral/internal/shellquote"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

func defineCompletion(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) != 1 {
			return usageErrorf("completion", "completion takes one shell name: bash, zsh or fish")
		}
		switch args[0] {
		case "bash":
			return writeBashCompletion(a.stdout)
		case "zsh":
			return writeZshCompletion(a.stdout)
		case "fish":
			return writeFishCompletion(a.stdout)
		}
		return usageErrorf("completion", "unknown shell %q (want bash, zsh or fish)", args[0])
	}
}

func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

func longFlags(c *command) string {
	var fl []string
	for _, n := range flagNames(c) {
		fl = append(fl, "--"+n)
	}
	return strings.Join(append(fl, "--help"), " ")
}

// writeBashCompletion prints _git_corral, which git's bash completion calls for
// `git corral <TAB>` (and loads through bash-completion's loader as "git-corral").
func writeBashCompletion(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# bash completion for git corral; git's completion calls _git_corral.\n")
	b.WriteString("_git_corral ()\n{\n")
	fmt.Fprintf(&b, "\tlocal subcommands=%q\n", strings.Join(commandNames(), " "))
	b.WriteString("\tlocal subcommand=\"$(__git_find_on_cmdline \"$subcommands\")\"\n")
	b.WriteString("\tif [ -z \"$subcommand\" ]; then\n\t\tcase \"$cur\" in\n")
	b.WriteString("\t\t-*) __gitcomp \"-C --box --help --version\" ;;\n")
	b.WriteString("\t\t*) __gitcomp \"$subcommands\" ;;\n\t\tesac\n\t\treturn\n\tfi\n")
	b.WriteString("\tcase \"$subcommand,$cur\" in\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "\t%s,-*) __gitcomp %q ;;\n", c.name, longFlags(c))
		if len(c.verbs) > 0 {
			fmt.Fprintf(&b, "\t%s,*) __gitcomp %q ;;\n", c.name, strings.Join(c.verbs, " "))
		}
	}
	b.WriteString("\thelp,*) __gitcomp \"$subcommands\" ;;\n")
	b.WriteString("\tesac\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeZshCompletion prints _git-corral, which zsh's _git calls for the user command corral.
func writeZshCompletion(w io.Writer) error {
	var b strings.Builder
	b.WriteString("#compdef git-corral\n# zsh completion for git corral.\n")
	b.WriteString("zstyle ':completion:*:*:git:*' user-commands corral:'run agents and untrusted code in a per-project VM'\n")
	b.WriteString("_git-corral () {\n\tlocal -a cmds\n\tcmds=(\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "\t\t%s\n", shellQuote(c.name+":"+c.summary))
	}
	b.WriteString("\t)\n\tif (( CURRENT == 2 )); then\n\t\t_describe 'git corral command' cmds\n\t\treturn\n\tfi\n")
	b.WriteString("\tcase $words[2] in\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "\t%s) compadd -- %s ;;\n", c.name, strings.Join(append(strings.Fields(longFlags(c)), c.verbs...), " "))
	}
	b.WriteString("\tesac\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFishCompletion prints completions attached to git's own fish completion.
func writeFishCompletion(w io.Writer) error {
	var b strings.Builder
	names := strings.Join(commandNames(), " ")
	b.WriteString("# fish completion for git corral.\n")
	b.WriteString("complete -c git -n '__fish_git_needs_command' -a corral -d 'run agents and untrusted code in a per-project VM'\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "complete -c git -f -n '__fish_git_using_command corral; and not __fish_seen_subcommand_from %s' -a %s -d %s\n",
			names, c.name, shellQuote(c.summary))
		for _, f := range flagNames(c) {
			fmt.Fprintf(&b, "complete -c git -f -n '__fish_git_using_command corral; and __fish_seen_subcommand_from %s' -l %s\n", c.name, f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shellQuote single-quotes s for sh, zsh and fish.
func shellQuote(s string) string { return shellquote.Path(s) }
