package gitshadow

// Reading a shell command from a config value, without running it, to find what it would run.
// The rules:
//   - The value is split into words and operators the way sh does (quotes, backslashes,
//     ; & | ( ) < > newline, $( and backquotes), closely enough to find command words; nothing
//     is expanded. A word holding $ or a glob character names nothing this can know.
//   - The command word of every simple command (after NAME=value assignments, keywords and
//     wrappers such as env, exec or nice) is a program: a word with a "/" is a path, a bare name
//     is looked up on PATH by the caller.
//   - The first operand of an interpreter (sh ci/x.sh, node x.js) is a script, even without a
//     "/"; a shell's -c operand is parsed again as a command; git SUB runs git-SUB.
//   - Every other word with a "/" (also after "=", as in --file=x/y) is a path the command may
//     run or read: being conservative costs a read-only mount, missing one leaves a hole.
//   - A value that cannot be split (an unterminated quote) falls back to every word with a "/".

import "strings"

// commandRefs is what a shell command names.
type commandRefs struct {
	// bare are program names without a "/", looked up on PATH.
	bare []string
	// paths are words that name a file: programs with a "/", scripts, operands with a "/".
	paths []string
}

// shellWord is a token of a command: a word, or an operator when op is set.
type shellWord struct {
	text string
	op   bool
	// dynamic is set when the word holds an unquoted $, backquote or glob character.
	dynamic bool
}

// parseCommand finds what a shell command names.
func parseCommand(cmd string) commandRefs {
	var r commandRefs
	words, ok := splitShell(cmd)
	if !ok {
		for _, w := range strings.FieldsFunc(cmd, func(c rune) bool { return strings.ContainsRune(" \t\n;&|()<>'\"`", c) }) {
			r.addPath(w)
		}
		return r
	}
	var simple []shellWord
	for i, w := range append(words, shellWord{op: true}) {
		if !w.op {
			simple = append(simple, w)
			continue
		}
		r.simpleCommand(simple)
		simple = nil
		if (w.text == "<" || w.text == ">") && i+1 < len(words) && !words[i+1].op {
			r.addPath(words[i+1].text) // a redirection's file
		}
	}
	return r
}

// splitShell splits cmd into words and operators. ok is false when a quote is not closed. It is
// one switch over the characters, longer than most functions here, so the cases read together.
func splitShell(cmd string) (out []shellWord, ok bool) {
	var cur strings.Builder
	inWord, dynamic := false, false
	flush := func() {
		if inWord {
			out = append(out, shellWord{text: cur.String(), dynamic: dynamic})
		}
		cur.Reset()
		inWord, dynamic = false, false
	}
	op := func(s string) {
		flush()
		out = append(out, shellWord{text: s, op: true})
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			for i < len(cmd) && cmd[i] != '\n' {
				i++
			}
			op("\n")
		case strings.IndexByte(";&|()\n`", c) >= 0:
			op(string(c))
		case c == '<' || c == '>':
			if inWord && isDigits(cur.String()) {
				cur.Reset()
				inWord = false // 2>file: the 2 is a file descriptor
			}
			op(string(c))
			for i+1 < len(cmd) && strings.IndexByte("<>&|", cmd[i+1]) >= 0 {
				i++
			}
		case c == '$' && i+1 < len(cmd) && cmd[i+1] == '(':
			op("(")
			i++
		case c == '\\':
			inWord = true
			if i+1 < len(cmd) {
				i++
				cur.WriteByte(cmd[i])
			}
		case c == '\'':
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			inWord = true
			cur.WriteString(cmd[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			j, text, dyn, closed := doubleQuoted(cmd, i+1)
			if !closed {
				return nil, false
			}
			inWord, dynamic = true, dynamic || dyn
			cur.WriteString(text)
			i = j
		default:
			inWord = true
			dynamic = dynamic || strings.IndexByte("$*?[", c) >= 0
			cur.WriteByte(c)
		}
	}
	flush()
	return out, true
}

// doubleQuoted reads a double-quoted string starting at cmd[i] (after the quote) and returns the
// index of the closing quote, the text, and whether it holds $ or a backquote.
func doubleQuoted(cmd string, i int) (end int, text string, dynamic, closed bool) {
	var b strings.Builder
	for ; i < len(cmd); i++ {
		switch c := cmd[i]; {
		case c == '"':
			return i, b.String(), dynamic, true
		case c == '\\' && i+1 < len(cmd) && strings.IndexByte("$`\"\\\n", cmd[i+1]) >= 0:
			i++
			b.WriteByte(cmd[i])
		default:
			dynamic = dynamic || c == '$' || c == '`'
			b.WriteByte(c)
		}
	}
	return i, "", false, false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// shellKeywords start or continue a compound command; the word after them is a command word.
var shellKeywords = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "fi": true,
	"do": true, "done": true, "while": true, "until": true, "!": true, "{": true, "}": true,
	"case": true, "esac": true, "for": true, "in": true, "function": true}

// wrappers run their first operand as a program.
var wrappers = map[string]bool{"env": true, "exec": true, "command": true, "nice": true, "nohup": true,
	"time": true, "xargs": true, "stdbuf": true, "setsid": true, "ionice": true, "sudo": true, "doas": true}

// interpreters run their first operand as a script; the value is the option that takes code
// instead (sh -c, node -e).
var interpreters = map[string]string{"sh": "-c", "bash": "-c", "dash": "-c", "zsh": "-c", "ksh": "-c",
	"fish": "-c", "node": "-e", "nodejs": "-e", "deno": "", "bun": "", "python": "-c", "python3": "-c",
	"perl": "-e", "ruby": "-e", "php": "-r", "lua": "-e", "tclsh": "", "awk": "", "osascript": "-e"}

// shells are the interpreters whose -c operand is itself a shell command.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true}

// builtins run inside the shell: they are never looked up on PATH.
var builtins = map[string]bool{"cd": true, "echo": true, "exit": true, "true": true, "false": true,
	":": true, ".": true, "set": true, "unset": true, "export": true, "test": true, "[": true,
	"printf": true, "read": true, "shift": true, "return": true, "eval": true, "trap": true,
	"wait": true, "umask": true, "alias": true, "local": true, "readonly": true, "type": true}

// simpleCommand records what one simple command names.
func (r *commandRefs) simpleCommand(ws []shellWord) {
	for _, w := range ws {
		r.addPath(w.text) // every path-looking word, operands included
	}
	for len(ws) > 0 {
		w := ws[0]
		name := w.text
		switch {
		case w.dynamic:
			return
		case shellKeywords[name] || isAssignment(name):
			ws = ws[1:]
			continue
		case wrappers[name]:
			r.program(name)
			ws = skipOptions(ws[1:])
			continue
		}
		r.program(name)
		base := name[strings.LastIndex(name, "/")+1:]
		if codeOpt, ok := interpreters[base]; ok {
			r.interpreter(ws[1:], codeOpt, shells[base])
		} else if base == "git" {
			if sub := gitSubcommand(ws[1:]); sub != "" {
				r.bare = append(r.bare, "git-"+sub)
			}
		}
		return
	}
}

// interpreter records the script an interpreter runs, or parses a shell's -c command.
func (r *commandRefs) interpreter(args []shellWord, codeOpt string, shell bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.dynamic:
			return
		case codeOpt != "" && a.text == codeOpt:
			if shell && i+1 < len(args) {
				more := parseCommand(args[i+1].text)
				r.bare = append(r.bare, more.bare...)
				r.paths = append(r.paths, more.paths...)
			}
			return
		case strings.HasPrefix(a.text, "-"):
			continue
		}
		r.paths = append(r.paths, a.text) // the script, relative to where git runs it
		return
	}
}

// gitSubcommand returns the subcommand of git's arguments, skipping global options.
func gitSubcommand(args []shellWord) string {
	for i := 0; i < len(args); i++ {
		a := args[i].text
		switch {
		case args[i].dynamic:
			return ""
		case a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// skipOptions drops the options and assignments a wrapper takes before its program.
func skipOptions(ws []shellWord) []shellWord {
	for len(ws) > 0 && (strings.HasPrefix(ws[0].text, "-") || isAssignment(ws[0].text)) {
		ws = ws[1:]
	}
	return ws
}

// isAssignment reports whether w is NAME=value.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// program records a command word: a path when it holds a "/", else a name for PATH.
func (r *commandRefs) program(name string) {
	switch {
	case name == "" || builtins[name] || shellKeywords[name]:
	case strings.Contains(name, "/"):
		r.paths = append(r.paths, name)
	default:
		r.bare = append(r.bare, name)
	}
}

// addPath records a word that looks like a path: one holding a "/", or the part after "=" of
// an option or assignment that does.
func (r *commandRefs) addPath(w string) {
	if _, after, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") || ok && isAssignment(w) {
		w = after
	}
	if strings.Contains(w, "/") && !strings.ContainsAny(w, "$`*?[") && !strings.Contains(w, "://") {
		r.paths = append(r.paths, w)
	}
}
