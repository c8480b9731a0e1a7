package provision

// This file holds the per-command rules of deps.go: which commands read which operand as code.
// Wrappers (command, builtin, exec, env, sudo, nice, timeout, xargs, find -exec…) are taken
// off first, so "command . x", "env -S 'bash x'" and "sudo -u u bash x" are read as ". x" and
// "bash x".

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// liveCwd is the working directory after "cd $CORRAL_PROJECT_DIR": the live project.
const liveCwd = "\x00live"

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "posh": true, "yash": true}

var interpRE = lazyre.New(`^(python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|luajit|Rscript|tclsh[0-9.]*|ts-node|tsx|awk|gawk|mawk)$`)

// wrapSpec says how to skip a wrapper's options: which take a value, which mean it runs
// nothing, and how many operands come before the command.
type wrapSpec struct {
	valueOpts  string // space-separated options that take the next word
	stopOpts   string // options after which nothing runs
	positional int
}

var wrappers = map[string]wrapSpec{
	"command": {stopOpts: " -v -V "}, "builtin": {}, "exec": {valueOpts: " -a "}, "nohup": {},
	"time": {valueOpts: " -f -o "}, "nice": {valueOpts: " -n "}, "setsid": {}, "chronic": {}, "unbuffer": {},
	"timeout": {valueOpts: " -s -k --signal --kill-after ", positional: 1},
	"stdbuf":  {valueOpts: " -i -o -e "}, "ionice": {valueOpts: " -c -n "},
	"sudo": {valueOpts: " -u -g -C -D -h -p -r -t -U -T -R ", stopOpts: " -l -v -k -K -e "},
	"doas": {valueOpts: " -u -C "}, "runuser": {valueOpts: " -u -g -G "},
}

// call applies the rules to one simple command, st being its statement (for redirections and
// pipes).
func (a *analyser) call(args []evWord, st *syntax.Stmt, line int) {
	for len(args) > 0 && !args[0].dyn {
		cmd := args[0].s
		switch {
		case cmd == "cd" || cmd == "pushd" || cmd == "popd":
			a.cd(args[1:], line)
			return
		case cmd == "." || cmd == "source":
			if len(args) > 1 {
				a.operand(args[1], st, line, depShell)
			}
			return
		case cmd == "eval":
			a.eval(args[1:], line)
			return
		case cmd == "env":
			args = a.env(args, line)
			continue
		case strings.Contains(cmd, "/") && !path.IsAbs(cmd):
			a.file1(args[0].word, line, depExec)
			return
		case path.IsAbs(cmd) && a.inTop(cmd):
			a.resolve(args[0].word, line)
			return
		}
		base := path.Base(cmd)
		if spec, ok := wrappers[base]; ok {
			args = skipOpts(args, spec)
			continue
		}
		switch {
		case base == "env":
			args = a.env(args, line)
			continue
		case base == "busybox" && len(args) > 1:
			args = args[1:]
			continue
		case shells[base]:
			a.shell(args, st, line)
		case interpRE.MatchString(base):
			a.interp(args, st, line)
		case base == "make" || base == "gmake":
			a.make(args, line)
		case base == "xargs":
			a.xargs(args, st, line)
		case base == "find":
			a.find(args, st, line)
		}
		return
	}
}

func (a *analyser) inTop(p string) bool {
	return a.top != "" && (p == a.top || strings.HasPrefix(p, a.top+"/"))
}

// skipOpts drops a wrapper and its options; nil when it runs nothing.
func skipOpts(args []evWord, spec wrapSpec) []evWord {
	i := 1
	for i < len(args) && !args[i].dyn {
		s := args[i].s
		switch {
		case s == "--":
			i++
		case strings.Contains(spec.stopOpts, " "+s+" "):
			return nil
		case strings.Contains(spec.valueOpts, " "+s+" "):
			i += 2
			continue
		case strings.HasPrefix(s, "-") && len(s) > 1:
			i++
			continue
		}
		break
	}
	i += spec.positional
	if i >= len(args) {
		return nil
	}
	return args[i:]
}

// env drops env and its options and assignments; -S's string is read as a command line of its
// own, -C changes the directory the command runs in.
func (a *analyser) env(args []evWord, line int) []evWord {
	i := 1
	for ; i < len(args) && !args[i].dyn; i++ {
		s := args[i].s
		switch {
		case s == "--":
			return args[i+1:]
		case s == "-u" || s == "--unset" || s == "-P":
			i++
		case s == "-C" || s == "--chdir":
			if i+1 < len(args) {
				a.cd(args[i+1:i+2], line)
			}
			i++
		case strings.HasPrefix(s, "--split-string=") || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "S")):
			split := ""
			if k := strings.Index(s, "="); strings.HasPrefix(s, "--") && k > 0 {
				split = s[k+1:]
			} else if k := strings.Index(s, "S"); k+1 < len(s) {
				split = s[k+1:]
			} else if i+1 < len(args) {
				i++
				split = args[i].s
			}
			a.splitString(split, args[i+1:], line)
			return nil
		case s == "--split-string" && i+1 < len(args):
			a.splitString(args[i+1].s, args[i+2:], line)
			return nil
		case strings.HasPrefix(s, "-") || strings.Contains(s, "="):
		default:
			return args[i:]
		}
	}
	return args[i:]
}

// splitString reads env -S's string, followed by the words after it, as one command line.
func (a *analyser) splitString(split string, rest []evWord, line int) {
	var b strings.Builder
	b.WriteString(split)
	for _, w := range rest {
		b.WriteString(" ")
		if w.node != nil {
			b.WriteString(printNode(w.node))
		} else {
			q, err := syntax.Quote(w.s, syntax.LangBash)
			if err != nil {
				return
			}
			b.WriteString(q)
		}
	}
	if !a.text(b.String(), line-1) {
		a.need(path.Dir(a.file), fmt.Sprintf("%s line %d runs env -S with a string review cannot read", a.file, line))
	}
}

// operand records a file given to a shell, source or an interpreter; "-", /dev/stdin and
// friends mean its input.
func (a *analyser) operand(w evWord, st *syntax.Stmt, line int, kind depKind) {
	switch {
	case w.node != nil && onlyReads(w.node):
	case !w.dyn && (w.s == "/dev/stdin" || w.s == "/dev/fd/0" || w.s == "/proc/self/fd/0" || w.s == "-"):
		a.stdin(st, line, kind)
	default:
		a.file1(w.word, line, kind)
	}
}

// cd follows the working directory: a literal directory moves it, anything else makes it
// unknown, and $CORRAL_PROJECT_DIR makes it the live project.
func (a *analyser) cd(args []evWord, line int) {
	for len(args) > 0 && !args[0].dyn && strings.HasPrefix(args[0].s, "-") && args[0].s != "-" {
		args = args[1:]
	}
	switch {
	case len(args) > 0 && strings.Contains(args[0].text, "CORRAL_PROJECT_DIR"):
		a.cwd = liveCwd
	case len(args) == 0 || args[0].dyn && !args[0].selfDir || args[0].s == "-" || path.IsAbs(args[0].s):
		a.cwd = ""
	default:
		base := a.cwd
		if args[0].selfDir {
			base = path.Dir(a.file)
		}
		if base == "" || base == liveCwd {
			return
		}
		a.cwd = path.Clean(path.Join(base, args[0].s))
		if a.cwd == ".." || strings.HasPrefix(a.cwd, "../") {
			a.cwd = ""
		}
	}
}

// eval reads literal arguments as code; a substitution of literal files was recorded by the
// walk; anything else cannot be known.
func (a *analyser) eval(args []evWord, line int) {
	var parts []string
	for _, w := range args {
		if w.dyn {
			if w.node != nil && onlyReads(w.node) {
				continue
			}
			a.dynamic(w.word, line, "evaluates code built at run time")
			return
		}
		parts = append(parts, w.s)
	}
	if len(parts) > 0 && !a.text(strings.Join(parts, " "), line-1) {
		a.need(path.Dir(a.file), fmt.Sprintf("%s line %d evaluates a string review cannot read", a.file, line))
	}
}

// shell reads a shell's arguments: -c's string is code, the first operand is a script, and
// without either the shell reads its input.
func (a *analyser) shell(args []evWord, st *syntax.Stmt, line int) {
	i, inline, input := 1, false, false
	for ; i < len(args) && !args[i].dyn; i++ {
		s := args[i].s
		if s == "--" || s == "-" {
			i++
			break
		}
		if s == "--rcfile" || s == "--init-file" {
			if i+1 < len(args) {
				a.operand(args[i+1], st, line, depShell)
			}
			i++
			continue
		}
		if s == "-o" || s == "+o" || s == "-O" || s == "+O" {
			i++
			continue
		}
		if !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+") {
			break
		}
		short := !strings.HasPrefix(s, "--")
		inline = inline || (short && strings.Contains(s, "c"))
		input = input || (short && strings.Contains(s, "s"))
	}
	switch {
	case inline && i < len(args):
		a.inline(args[i], line)
	case i < len(args) && !input:
		a.operand(args[i], st, line, depShell)
	default:
		a.stdin(st, line, depShell)
	}
}

// inline reads the string of "sh -c STRING".
func (a *analyser) inline(w evWord, line int) {
	switch {
	case w.node != nil && onlyReads(w.node):
	case w.dyn:
		a.dynamic(w.word, line, "runs code built at run time")
	case !a.text(w.s, line-1):
		a.need(path.Dir(a.file), fmt.Sprintf("%s line %d runs a string review cannot read", a.file, line))
	}
}

// interp reads an interpreter's arguments: inline code or a module may load anything of the
// working directory; a file operand asks for its directory.
func (a *analyser) interp(args []evWord, st *syntax.Stmt, line int) {
	i, base := 1, path.Base(args[0].s)
	if (base == "deno" || base == "bun") && len(args) > 1 && args[1].s == "run" {
		i = 2
	}
	for ; i < len(args); i++ {
		w := args[i]
		if w.dyn || !strings.HasPrefix(w.s, "-") {
			break
		}
		s := w.s
		switch {
		case s == "--":
			i++
		case s == "-":
			a.stdin(st, line, depTree)
			return
		case s == "-W" || s == "-X" || s == "-v" && strings.HasSuffix(base, "awk"):
			i++
			continue
		case s == "-f" && strings.HasSuffix(base, "awk"):
			if i+1 < len(args) {
				a.operand(args[i+1], st, line, depTree)
			}
			return
		case strings.HasSuffix(base, "awk"):
			continue
		case strings.HasPrefix(s, "--") && !strings.HasPrefix(s, "--eval") && !strings.HasPrefix(s, "--print") && !strings.HasPrefix(s, "--require") && !strings.HasPrefix(s, "--import"):
			continue
		case strings.HasPrefix(s, "--") || strings.ContainsAny(s[1:], "cemrpEMIl"):
			a.workDir(line, fmt.Sprintf("runs %s with inline code or a module", base))
			return
		default:
			continue
		}
		break
	}
	if strings.HasSuffix(base, "awk") {
		return
	}
	if i < len(args) {
		a.operand(args[i], st, line, depTree)
		return
	}
	a.stdin(st, line, depTree)
}

// workDir asks for the working directory (or the file's own when unknown).
func (a *analyser) workDir(line int, what string) {
	switch dir := a.cwd; dir {
	case liveCwd:
		a.out.problems = append(a.out.problems, fmt.Sprintf("%s line %d %s in the live project (after cd to CORRAL_PROJECT_DIR); do it before that cd", a.file, line, what))
	case "":
		a.need(path.Dir(a.file), fmt.Sprintf("%s line %d %s, which may load any file of its directory", a.file, line, what))
	default:
		a.need(dir, fmt.Sprintf("%s line %d %s, which may load any file of its directory", a.file, line, what))
	}
}

// make asks for the directory of its makefile: make reads the makefile there and runs what it
// says, including other files.
func (a *analyser) make(args []evWord, line int) {
	saved := a.cwd
	defer func() { a.cwd = saved }()
	var files []word
	for i := 1; i < len(args); i++ {
		w := args[i]
		switch s := w.s; {
		case w.dyn:
		case (s == "-f" || s == "--file" || s == "--makefile") && i+1 < len(args):
			files = append(files, args[i+1].word)
			i++
		case strings.HasPrefix(s, "--file=") || strings.HasPrefix(s, "--makefile="):
			files = append(files, word{s: s[strings.Index(s, "=")+1:], text: s})
		case strings.HasPrefix(s, "-f") && len(s) > 2:
			files = append(files, word{s: s[2:], text: s})
		case (s == "-C" || s == "--directory") && i+1 < len(args):
			a.cd(args[i+1:i+2], line)
			i++
		case strings.HasPrefix(s, "-C") && len(s) > 2:
			a.cd([]evWord{{word: word{s: s[2:], text: s}}}, line)
		}
	}
	for _, f := range files {
		a.file1(f, line, depTree)
	}
	if len(files) == 0 {
		a.workDir(line, "runs make")
	}
}

// xargs runs its command with operands from its input: a command still lacking its file
// then has one review cannot know.
func (a *analyser) xargs(args []evWord, st *syntax.Stmt, line int) {
	i, repl := 1, ""
	for ; i < len(args) && !args[i].dyn && strings.HasPrefix(args[i].s, "-"); i++ {
		switch s := args[i].s; {
		case s == "-I" || s == "--replace":
			if i+1 < len(args) {
				repl = args[i+1].s
			}
			i++
		case s == "-i" || strings.HasPrefix(s, "--replace="):
			repl = "{}"
		case strings.HasPrefix(s, "-I"):
			repl = s[2:]
		case strings.Contains(" -n -L -P -s -d -E -a --max-args --max-lines --max-procs --delimiter --eof --arg-file ", " "+s+" "):
			i++
		}
	}
	rest := append([]evWord(nil), args[i:]...)
	for k := range rest {
		if repl != "" && strings.Contains(rest[k].s, repl) {
			rest[k] = evWord{word: word{dyn: true, text: "(xargs input)"}}
		}
	}
	rest = append(rest, evWord{word: word{dyn: true, text: "(xargs input)"}})
	a.call(rest, st, line)
}

// find runs the command of -exec with "{}" for each file it finds.
func (a *analyser) find(args []evWord, st *syntax.Stmt, line int) {
	for i := 1; i < len(args); i++ {
		switch args[i].s {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		var sub []evWord
		for i++; i < len(args) && args[i].s != ";" && args[i].s != "+"; i++ {
			w := args[i]
			if strings.Contains(w.s, "{}") {
				w = evWord{word: word{dyn: true, text: "(files find finds)"}}
			}
			sub = append(sub, w)
		}
		a.call(sub, st, line)
	}
}
