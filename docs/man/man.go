// Package man holds git corral's manual page source, the one source of help: the man page is
// rendered from it and every command's -h output is cut from it.
package man

import (
	_ "embed"
	"strings"
)

// Source is the Markdown source of git-corral(1), rendered by go-md2man.
//
//go:embed git-corral.1.md
var Source string

// Section returns the text of the "## git corral NAME" section of the source, without its
// heading, or "" when there is none.
func Section(name string) string {
	head := "## git corral " + name + "\n"
	i := strings.Index(Source, head)
	if i < 0 {
		return ""
	}
	rest := Source[i+len(head):]
	if j := strings.Index(rest, "\n#"); j >= 0 {
		rest = rest[:j+1]
	}
	return strings.TrimSpace(rest) + "\n"
}

// Plain turns a section's Markdown into terminal text: emphasis marks dropped, definition
// lists indented.
func Plain(md string) string {
	r := strings.NewReplacer(`\*`, "*", `\_`, "_", "**", "", "*", "", `\`, "")
	var b strings.Builder
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, ":   ") {
			line = "    " + line[4:]
		}
		b.WriteString(r.Replace(line))
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
