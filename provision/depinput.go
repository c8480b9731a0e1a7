package provision

// This file holds the rules of deps.go for what a shell or interpreter reads on its input: a
// redirected file, a here-string or here-document of code, or the output of the command before
// a pipe ("cat x | sh", "echo '. x' | bash"). Anything else piped into a shell cannot be
// determined; a download piped into one is flags.go's business.

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// stdin records what a shell or interpreter reads on its input: "< FILE", a here-string or
// here-document, or a pipe from "cat FILE" or "echo CODE".
func (a *analyser) stdin(st *syntax.Stmt, line int, kind depKind) {
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.RdrIn:
			a.file1(evalWord(r.Word), line, kind)
			return
		case syntax.WordHdoc:
			a.fed(r.Word, false, line, kind)
			return
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				a.fed(r.Hdoc, true, line, kind)
			}
			return
		}
	}
	if from := a.pipeFrom[st]; from != nil {
		a.piped(from, line, kind)
	}
}

// fed reads a here-string or here-document handed to a shell or interpreter as code.
func (a *analyser) fed(w *syntax.Word, hdoc bool, line int, kind depKind) {
	if onlyReads(w) {
		return
	}
	code, ok := "", true
	if hdoc {
		var b strings.Builder
		for _, p := range w.Parts {
			l, isLit := p.(*syntax.Lit)
			ok = ok && isLit
			if isLit {
				b.WriteString(l.Value)
			}
		}
		code = b.String()
	} else {
		v := evalWord(w)
		code, ok = v.s, !v.dyn
	}
	switch {
	case !ok:
		a.need(path.Dir(a.file), fmt.Sprintf("%s line %d feeds code built at run time to %s, which review cannot determine", a.file, line, kindName(kind)))
	case kind != depShell:
		a.workDir(line, "feeds inline code to an interpreter")
	case !a.text(code, line-1):
		a.need(path.Dir(a.file), fmt.Sprintf("%s line %d feeds a shell a string review cannot read", a.file, line))
	}
}

func kindName(k depKind) string {
	if k == depShell {
		return "a shell"
	}
	return "an interpreter"
}

// piped reads what the command before a pipe hands a shell or interpreter.
func (a *analyser) piped(from *syntax.Stmt, line int, kind depKind) {
	for {
		b, ok := from.Cmd.(*syntax.BinaryCmd)
		if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) {
			break
		}
		from = b.Y
	}
	c, ok := from.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) == 0 {
		a.dynamic(word{text: printNode(from)}, line, "pipes the output of a command into a shell")
		return
	}
	args := a.words(c.Args)
	switch path.Base(args[0].s) {
	case "cat":
		for _, f := range readFiles([]*syntax.Stmt{from}) {
			a.file1(f, line, kind)
		}
	case "curl", "wget":
		// Remote code: flags.go points at it; nothing of the repository.
	case "echo", "printf":
		var parts []string
		for _, w := range args[1:] {
			if w.dyn {
				a.dynamic(w.word, line, "pipes code built at run time into a shell")
				return
			}
			parts = append(parts, w.s)
		}
		if kind == depShell {
			a.text(strings.Join(parts, " "), line-1)
		} else {
			a.workDir(line, "pipes inline code into an interpreter")
		}
	default:
		a.dynamic(word{text: printNode(from)}, line, "pipes the output of a command into a shell")
	}
}
