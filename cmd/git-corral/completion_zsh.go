package main

import (
	"fmt"
	"io"
	"strings"
)

// writeZshCompletion prints the file _git-corral. zsh autoloads it as the body of the function
// _git-corral, which _git calls for `git corral …` (and compinit binds to the git-corral command);
// _git lists corral among the commands for `git cor<TAB>` because the file is on $fpath, its
// second line is "#description …" and git-corral is on $PATH. The body completes at once: it
// defines no function, so the first TAB is answered too.
func writeZshCompletion(w io.Writer) error {
	model := compModel()
	byKind := valueFlagsByKind(model)
	var b strings.Builder
	b.WriteString("#compdef git-corral\n#description run coding agents and untrusted repositories in a per-project VM\n")
	b.WriteString("# zsh completion for git corral (git corral completion zsh).\n")
	b.WriteString("local -a cmds boxes\nlocal i=2 sub= arg=\ncmds=(\n")
	for _, c := range model {
		fmt.Fprintf(&b, "\t%s\n", shellQuote(strings.ReplaceAll(c.name, ":", `\:`)+":"+c.summary))
	}
	b.WriteString(")\nboxes=( ${CORRAL_HOME:-$HOME/.corral}/boxes/*.json(N:t:r) )\n")
	b.WriteString("while (( i < CURRENT )); do\n\tcase $words[i] in\n")
	fmt.Fprintf(&b, "\t(%s) (( i++ )) ;;\n", strings.Join(allValueFlags(byKind), "|"))
	b.WriteString("\t(-*) ;;\n\t(*) if [[ -z $sub ]]; then sub=$words[i]; elif [[ -z $arg ]]; then arg=$words[i]; fi ;;\n")
	b.WriteString("\tesac\n\t(( i++ ))\ndone\n")
	b.WriteString("case $words[CURRENT-1] in\n")
	fmt.Fprintf(&b, "(%s) compadd -- %s; return ;;\n", strings.Join(byKind[valueNetwork], "|"), strings.Join(networkModes, " "))
	fmt.Fprintf(&b, "(%s) compadd -- $boxes; return ;;\n", strings.Join(byKind[valueBox], "|"))
	fmt.Fprintf(&b, "(%s) _directories; return ;;\n", strings.Join(byKind[valueDir], "|"))
	fmt.Fprintf(&b, "(%s) _files; return ;;\n", strings.Join(byKind[valueFile], "|"))
	fmt.Fprintf(&b, "(%s) _message 'value'; return 1 ;;\n", strings.Join(byKind[valueFree], "|"))
	b.WriteString("esac\nif [[ -z $sub ]]; then\n")
	fmt.Fprintf(&b, "\tif [[ $PREFIX == -* ]]; then compadd -- %s; else _describe -t commands 'git corral command' cmds; fi\n", joinFlags(globalFlags))
	b.WriteString("\treturn\nfi\nif [[ $PREFIX == -* ]]; then\n\tcase $sub in\n")
	for _, c := range model {
		fmt.Fprintf(&b, "\t(%s) compadd -- %s ;;\n", c.name, joinFlags(c.flags))
	}
	b.WriteString("\tesac\n\treturn\nfi\n[[ -z $arg ]] || return 1\ncase $sub in\n")
	for _, c := range model {
		switch {
		case len(c.verbs) > 0:
			fmt.Fprintf(&b, "(%s) compadd -- %s ;;\n", c.name, strings.Join(c.verbs, " "))
		case c.revision:
			fmt.Fprintf(&b, "(%s) compadd -- ${(f)\"$(git for-each-ref --format='%%(refname:short)' 2>/dev/null)\"} ;;\n", c.name)
		}
	}
	b.WriteString("(help) _describe -t commands 'git corral command' cmds ;;\n(*) return 1 ;;\nesac\n")
	_, err := io.WriteString(w, b.String())
	return err
}
