package main

import (
	"fmt"
	"io"
	"strings"
)

// fishHelpers finds the git corral command and its first operand on the command line, skipping
// global flags and flag values, and lists the box names from $CORRAL_HOME/boxes/*.json.
const fishHelpers = `function __git_corral_words
    set -l words (commandline -opc)
    set -e words[1]
    test "$words[1]" = corral; and set -e words[1]
    set -l skip 0
    for w in $words
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case %s
                set skip 1
            case '-*'
            case '*'
                echo $w
        end
    end
end
function __git_corral_using -a name
    set -l w (__git_corral_words)
    test "$w[1]" = "$name"
end
function __git_corral_needs_command
    set -l w (__git_corral_words)
    test (count $w) -eq 0
end
function __git_corral_needs_arg -a name
    set -l w (__git_corral_words)
    test "$w[1]" = "$name"; and test (count $w) -eq 1
end
function __git_corral_boxes
    set -l home $CORRAL_HOME
    test -n "$home"; or set home ~/.corral
    for f in $home/boxes/*.json
        string replace -r '\.json$' '' -- (path basename $f)
    end
end
`

// writeFishCompletion prints the completions of the git-corral command, installed as
// vendor_completions.d/git-corral.fish. git's fish completion asks them for `git corral …`
// (with complete -C "git-corral …"); fish 3.6 does so only through the hook writeFishGitHook
// prints, as its own git.fish looks for "git-git-corral".
func writeFishCompletion(w io.Writer) error {
	model := compModel()
	byKind := valueFlagsByKind(model)
	var b strings.Builder
	b.WriteString("# fish completion for git corral (git corral completion fish).\n")
	fmt.Fprintf(&b, fishHelpers, strings.Join(allValueFlags(byKind), " "))
	b.WriteString("complete -c git-corral -f\n")
	for _, f := range globalFlags {
		fmt.Fprintf(&b, "complete -c git-corral -n __git_corral_needs_command %s\n", fishFlag(f))
	}
	for _, c := range model {
		fmt.Fprintf(&b, "complete -c git-corral -n __git_corral_needs_command -a %s -d %s\n", c.name, shellQuote(c.summary))
		cond := shellQuote("__git_corral_using " + c.name)
		for _, f := range c.flags {
			fmt.Fprintf(&b, "complete -c git-corral -n %s %s\n", cond, fishFlag(f))
		}
		arg := shellQuote("__git_corral_needs_arg " + c.name)
		switch {
		case len(c.verbs) > 0:
			fmt.Fprintf(&b, "complete -c git-corral -n %s -a %s\n", arg, shellQuote(strings.Join(c.verbs, " ")))
		case c.revision:
			fmt.Fprintf(&b, "complete -c git-corral -n %s -a %s\n", arg, shellQuote("(git for-each-ref --format='%(refname:short)' 2>/dev/null)"))
		}
	}
	fmt.Fprintf(&b, "complete -c git-corral -n %s -a %s\n", shellQuote("__git_corral_needs_arg help"), shellQuote(strings.Join(commandNames(model), " ")))
	_, err := io.WriteString(w, b.String())
	return err
}

// fishFlag returns the complete(1) options for one flag: its name and what its value is.
func fishFlag(f compFlag) string {
	opt := "-l " + f.name
	if len(f.name) == 1 {
		opt = "-s " + f.name
	}
	switch f.value {
	case valueNetwork:
		return opt + " -x -a " + shellQuote(strings.Join(networkModes, " "))
	case valueBox:
		return opt + " -x -a '(__git_corral_boxes)'"
	case valueDir:
		return opt + " -x -a '(__fish_complete_directories)'"
	case valueFile:
		return opt + " -r -F"
	case valueFree:
		return opt + " -x"
	}
	return opt
}

// writeFishGitHook prints the one line, installed as vendor_conf.d/git-corral.fish, that makes
// `git corral …` ask git-corral's completions. It is what a later fish's git.fish does for every
// git-* command; fish 3.6's git.fish tests for the command "git-corral" instead of "corral" and
// so never does. The condition is evaluated only while completing git, after git.fish loaded.
func writeFishGitHook(w io.Writer) error {
	_, err := io.WriteString(w, "# git corral: complete `git corral …` with git-corral's completions (git corral completion fish --git-hook).\n"+
		"complete -c git -f -n '__fish_git_using_command corral' -a '(__fish_git_complete_custom_command corral)'\n")
	return err
}
