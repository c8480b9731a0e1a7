package provision

// This file finds the repository files a provision script pulls in, by parsing it as shell
// (mvdan.cc/sh, bash dialect) rather than matching lines, so quoting, backslash spellings,
// blocks, subshells, command substitutions and here-documents are read as the shell reads
// them. Rules:
//   - A file is a dependency when the script sources it (". x", "source x", through command,
//     builtin, exec, env, sudo, xargs…), runs it with a shell ("bash x", "sh -c '. x'",
//     "bash < x", a here-string or pipe of "cat x"), runs it by path ("./x"), evaluates it
//     ("eval \"$(cat x)\"", "$(<x)"), or hands it to an interpreter or make.
//   - Paths resolve against the working directory, followed through "cd DIR" (scripts start in
//     the repository top), or against the file's own directory for "$(dirname "$0")".
//   - An interpreter (python, node, perl, ruby…) or make may load any file beside the one it
//     was given, and a path built at run time cannot be known: both ask for the approval of a
//     whole directory (needDir), never for a guess.
//   - A path outside the repository is reported, not followed: it is not covered.
//
// Nothing here reads files; scan.go resolves what this finds.

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// depKind says how a script uses a file.
type depKind int

const (
	// depShell files are read by a shell: sourced, run by sh or bash, evaluated.
	depShell depKind = iota
	// depExec files are executed by path; their first line decides who reads them.
	depExec
	// depTree files are run by an interpreter or make, which may load files beside them.
	depTree
	// depRead files are printed whole by a substitution ("$(cat x)"): whatever takes the text
	// may run it, so they are followed as shell when they parse as shell, and only hashed
	// when they do not (data, such as a version file).
	depRead
)

// dep is one repository file a script pulls in.
type dep struct {
	path string // repository-relative, clean
	line int
	kind depKind
	cwd  string // the working directory there, repository-relative ("" unknown)
}

// dirNeed is a directory whose every file the approval must cover, and why.
type dirNeed struct {
	dir string
	why string
}

// depScan is what one file pulls in.
type depScan struct {
	deps     []dep
	dirs     []dirNeed
	outside  []string // paths outside the repository: flagged, not covered
	problems []string // uses review refuses
}

// analyser walks one file; cwd is "" once the working directory cannot be known.
type analyser struct {
	file      string // repository-relative path of the file analysed
	top       string // the repository top on this machine (for absolute paths into it)
	cwd       string
	pipeFrom  map[*syntax.Stmt]*syntax.Stmt
	out       *depScan
	textDepth int
}

// scriptDeps finds what body (the file rel, starting in cwd) pulls in. A file that does not
// parse as shell asks for its directory, unless lenient (text read as data).
func scriptDeps(body []byte, rel, top, cwd string, lenient bool) depScan {
	var out depScan
	a := &analyser{file: rel, top: top, cwd: cwd, pipeFrom: map[*syntax.Stmt]*syntax.Stmt{}, out: &out}
	if !a.text(string(body), 0) && !lenient {
		a.need(path.Dir(rel), fmt.Sprintf("%s does not parse as a shell script", rel))
	}
	return out
}

// text parses src as shell and walks it; lineBase is added to its line numbers (for code
// nested in a string). It reports whether src parsed.
func (a *analyser) text(src string, lineBase int) bool {
	if a.textDepth > 8 {
		return false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), a.file)
	if err != nil {
		return false
	}
	a.textDepth++
	defer func() { a.textDepth-- }()
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				a.pipeFrom[n.Y] = n.X
			}
		case *syntax.Stmt:
			if c, ok := n.Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 {
				a.call(a.words(c.Args), n, lineBase+int(n.Pos().Line()))
			}
		case *syntax.CmdSubst:
			a.reads(n.Stmts, lineBase+int(n.Pos().Line()))
		case *syntax.ProcSubst:
			a.reads(n.Stmts, lineBase+int(n.Pos().Line()))
		}
		return true
	})
	return true
}

// reads records the files a substitution prints whole ("$(cat x)", "$(<x)", "<(cat x)"):
// whatever it feeds, the script may run them.
func (a *analyser) reads(stmts []*syntax.Stmt, line int) {
	for _, f := range readFiles(stmts) {
		if f.dyn {
			a.dynamic(f, line, "reads a file named at run time")
			continue
		}
		a.file1(f, line, depRead)
	}
}

// readFiles returns the operands of a substitution that is only "cat FILE…" or "<FILE".
func readFiles(stmts []*syntax.Stmt) []word {
	if len(stmts) != 1 {
		return nil
	}
	s := stmts[0]
	var out []word
	if c, ok := s.Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 && c.Args[0].Lit() == "cat" {
		for _, w := range c.Args[1:] {
			if v := evalWord(w); !strings.HasPrefix(v.s, "-") || v.dyn {
				out = append(out, v)
			}
		}
	}
	if s.Cmd == nil || out != nil {
		for _, r := range s.Redirs {
			if r.Op == syntax.RdrIn && r.Word != nil {
				out = append(out, evalWord(r.Word))
			}
		}
	}
	return out
}

// onlyReads reports whether w is one substitution that prints literal files (already recorded
// as dependencies by the walk).
func onlyReads(w *syntax.Word) bool {
	if len(w.Parts) == 1 {
		if q, ok := w.Parts[0].(*syntax.DblQuoted); ok && len(q.Parts) == 1 {
			return onlyReads(&syntax.Word{Parts: q.Parts})
		}
	}
	if len(w.Parts) != 1 {
		return false
	}
	var stmts []*syntax.Stmt
	switch p := w.Parts[0].(type) {
	case *syntax.CmdSubst:
		stmts = p.Stmts
	case *syntax.ProcSubst:
		stmts = p.Stmts
	default:
		return false
	}
	files := readFiles(stmts)
	for _, f := range files {
		if f.dyn {
			return false
		}
	}
	return len(files) > 0
}

// file1 resolves one literal path used as code and records it.
func (a *analyser) file1(w word, line int, kind depKind) {
	rel, ok := a.resolve(w, line)
	if !ok {
		return
	}
	a.out.deps = append(a.out.deps, dep{path: rel, line: line, kind: kind, cwd: a.cwd})
	if kind == depTree {
		a.need(path.Dir(rel), fmt.Sprintf("%s line %d runs %s with a program that may load files beside it", a.file, line, rel))
	}
}

// resolve turns a literal path into a repository-relative one, or reports why it cannot.
func (a *analyser) resolve(w word, line int) (string, bool) {
	p := w.s
	switch {
	case w.dyn:
		a.dynamic(w, line, "names a file at run time")
		return "", false
	case p == "/dev/stdin" || p == "/dev/fd/0" || p == "/proc/self/fd/0":
		return "", false
	case strings.HasPrefix(p, "~"):
		a.outsideFlag(line, "uses", p)
		return "", false
	case path.IsAbs(p) && a.inTop(p):
		a.live(line, p, "by its absolute path")
		return "", false
	case path.IsAbs(p):
		a.outsideFlag(line, "uses", p)
		return "", false
	}
	base := a.cwd
	if w.selfDir {
		base = path.Dir(a.file)
	}
	switch base {
	case "":
		a.dynamic(w, line, "names a file after the working directory became unknown")
		return "", false
	case liveCwd:
		a.live(line, p, "after cd to CORRAL_PROJECT_DIR")
		return "", false
	}
	rel := path.Clean(path.Join(base, p))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		a.out.problems = append(a.out.problems, fmt.Sprintf("%s line %d uses %q, not a clean path inside the repository", a.file, line, p))
		return "", false
	}
	return rel, true
}

func (a *analyser) outsideFlag(line int, what, p string) {
	a.out.outside = append(a.out.outside, fmt.Sprintf("%s line %d %s %q, outside the repository: its content is not covered by the approval", a.file, line, what, p))
}

// live refuses code read from the project mount: the approved copy cannot stand in for it.
func (a *analyser) live(line int, p, how string) {
	a.out.problems = append(a.out.problems, fmt.Sprintf("%s line %d reads %q from the live project %s; name it relative to the working directory (scripts run from an approved copy)", a.file, line, p, how))
}

// dynamic asks for the directory a run-time path lies in: the directory its literal start
// names, else the file's own directory.
func (a *analyser) dynamic(w word, line int, what string) {
	switch {
	case strings.Contains(w.text, "CORRAL_PROJECT_DIR") || (a.cwd == liveCwd && !w.selfDir && !path.IsAbs(w.prefix)):
		a.live(line, w.text, "("+what+")")
		return
	case homeRE.MatchString(w.text) || path.IsAbs(w.prefix):
		a.outsideFlag(line, what, w.text)
		return
	}
	dir := path.Dir(a.file)
	if i := strings.LastIndex(w.prefix, "/"); i >= 0 {
		base := a.cwd
		if w.selfDir || base == "" {
			base = path.Dir(a.file)
		}
		dir = path.Clean(path.Join(base, w.prefix[:i]))
	}
	if dir == ".." || strings.HasPrefix(dir, "../") {
		a.outsideFlag(line, what, w.text)
		return
	}
	a.need(dir, fmt.Sprintf("%s line %d %s (%s), which review cannot determine", a.file, line, what, w.text))
}

// homeRE matches a word starting in the user's home, which is never the repository.
var homeRE = lazyre.New(`^"?(\$HOME|\$\{HOME\}|~)(/|"|$)`)

func (a *analyser) need(dir, why string) {
	a.out.dirs = append(a.out.dirs, dirNeed{dir: dir, why: why})
}
