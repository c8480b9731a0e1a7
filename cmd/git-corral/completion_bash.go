package main

import (
	"fmt"
	"io"
	"strings"
)

// bashBoxes lists the box names from $CORRAL_HOME/boxes/*.json, one a line, without running
// anything; ~/.corral is where home.Resolve looks when CORRAL_HOME is unset.
const bashBoxes = `__git_corral_boxes ()
{
	local f
	for f in "${CORRAL_HOME:-$HOME/.corral}"/boxes/*.json; do
		[ -e "$f" ] || continue
		f="${f##*/}"
		printf '%s\n' "${f%.json}"
	done
}
`

// writeBashCompletion prints _git_corral, which git's bash completion calls for
// `git corral <TAB>` (bash-completion's loader finds this file as "git-corral"). It relies on
// git's helpers (__gitcomp, __gitcomp_nl, __git_complete_refs) and its cur, prev, words, cword.
func writeBashCompletion(w io.Writer) error {
	model := compModel()
	byKind := valueFlagsByKind(model)
	var b strings.Builder
	b.WriteString("# bash completion for git corral; git's completion calls _git_corral.\n")
	b.WriteString(bashBoxes)
	b.WriteString("_git_corral ()\n{\n")
	fmt.Fprintf(&b, "\tlocal subcommands=%s\n", shellQuote(strings.Join(commandNames(model), " ")))
	b.WriteString("\tlocal i=0 sub=\"\" arg=\"\"\n")
	b.WriteString("\twhile [ $i -lt $cword ] && [ \"${words[i]}\" != corral ] && [ \"${words[i]}\" != git-corral ]; do i=$((i+1)); done\n")
	b.WriteString("\ti=$((i+1))\n\twhile [ $i -lt $cword ]; do\n\t\tcase \"${words[i]}\" in\n")
	fmt.Fprintf(&b, "\t\t%s) i=$((i+1)) ;;\n", strings.Join(allValueFlags(byKind), "|"))
	b.WriteString("\t\t-*) ;;\n\t\t*) if [ -z \"$sub\" ]; then sub=\"${words[i]}\"; elif [ -z \"$arg\" ]; then arg=\"${words[i]}\"; fi ;;\n")
	b.WriteString("\t\tesac\n\t\ti=$((i+1))\n\tdone\n")
	writeBashValues(&b, byKind)
	b.WriteString("\tif [ -z \"$sub\" ]; then\n\t\tcase \"$cur\" in\n")
	fmt.Fprintf(&b, "\t\t-*) __gitcomp %s ;;\n", shellQuote(joinFlags(globalFlags)))
	b.WriteString("\t\t*) __gitcomp \"$subcommands\" ;;\n\t\tesac\n\t\treturn\n\tfi\n")
	b.WriteString("\tcase \"$sub,$cur\" in\n")
	for _, c := range model {
		fmt.Fprintf(&b, "\t%s,-*) __gitcomp %s ;;\n", c.name, shellQuote(joinFlags(c.flags)))
		switch {
		case len(c.verbs) > 0:
			fmt.Fprintf(&b, "\t%s,*) [ -n \"$arg\" ] || __gitcomp %s ;;\n", c.name, shellQuote(strings.Join(c.verbs, " ")))
		case c.revision:
			fmt.Fprintf(&b, "\t%s,*) [ -n \"$arg\" ] || __git_complete_refs ;;\n", c.name)
		}
	}
	b.WriteString("\thelp,*) [ -n \"$arg\" ] || __gitcomp \"$subcommands\" ;;\n")
	b.WriteString("\tesac\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBashValues prints the part of _git_corral that completes a flag's value, given as the
// next word (--network <TAB>) or after = (--network=<TAB>).
func writeBashValues(b *strings.Builder, byKind map[string][]string) {
	modes := shellQuote(strings.Join(networkModes, " "))
	b.WriteString("\tcase \"$prev\" in\n")
	fmt.Fprintf(b, "\t%s) __gitcomp %s; return ;;\n", strings.Join(byKind[valueNetwork], "|"), modes)
	fmt.Fprintf(b, "\t%s) __gitcomp_nl \"$(__git_corral_boxes)\"; return ;;\n", strings.Join(byKind[valueBox], "|"))
	fmt.Fprintf(b, "\t%s) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n", strings.Join(byKind[valueDir], "|"))
	fmt.Fprintf(b, "\t%s) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", strings.Join(byKind[valueFile], "|"))
	fmt.Fprintf(b, "\t%s) COMPREPLY=(); return ;;\n", strings.Join(byKind[valueFree], "|"))
	b.WriteString("\tesac\n\tcase \"$cur\" in\n")
	for _, f := range byKind[valueNetwork] {
		fmt.Fprintf(b, "\t%s=*) __gitcomp %s \"\" \"${cur#%s=}\"; return ;;\n", f, modes, f)
	}
	for _, f := range byKind[valueBox] {
		fmt.Fprintf(b, "\t%s=*) __gitcomp_nl \"$(__git_corral_boxes)\" \"\" \"${cur#%s=}\"; return ;;\n", f, f)
	}
	b.WriteString("\tesac\n")
}

// allValueFlags returns every flag that takes a value, of any kind, sorted by kind then name.
func allValueFlags(byKind map[string][]string) []string {
	var all []string
	for _, k := range []string{valueNetwork, valueBox, valueDir, valueFile, valueFree} {
		all = append(all, byKind[k]...)
	}
	return all
}

// joinFlags returns the flags as typed, space-separated.
func joinFlags(flags []compFlag) string {
	var names []string
	for _, f := range flags {
		names = append(names, dashed(f.name))
	}
	return strings.Join(names, " ")
}
