package vm

// This file runs a caller's fixed shell text in the session's own shell before its command.
// Under software emulation every process the guest starts costs tens of milliseconds, and a
// short command's whole run is a few of them: a prelude that ran as `sh -c TEXT ARGS -- CMD`
// paid a shell's exec before the command even when it had nothing to do. Rules:
//   - Script is the caller's constant; values reach it only as Args, its positional
//     parameters, each quoted as every argument is (shellQuote), so no value is ever parsed
//     as shell text.
//   - It runs after the cd to the session's directory and after the gate or in-band check
//     that precede the whole command line: nothing of it runs before the command may.
//   - It runs in the shell that then runs or execs the command: it must neither exit nor exec;
//     what it exports the command inherits. Its status does not stop the command.

import (
	"fmt"
	"strings"
)

// Prelude is shell text a session runs in its own shell before its command (SessionOptions).
type Prelude struct {
	Script string   // fixed shell text: the caller's constant, never built from values
	Args   []string // Script's positional parameters ("$@")
}

// text returns the prelude as one block of the command line: its parameters set, the script,
// and a status of 0 whatever the script's last command returned.
func (p Prelude) text() (string, error) {
	var b strings.Builder
	b.WriteString("{ set --")
	for i, a := range p.Args {
		if strings.ContainsRune(a, 0) {
			return "", fmt.Errorf("run in box: prelude argument %d contains a NUL byte", i)
		}
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n" + p.Script + "\n:; }")
	return b.String(), nil
}

// CommandLine is the one command string a session sends to the guest for argv in dir with
// prelude p (p.Script "" for none), as Run builds it before a gate or in-band check.
func CommandLine(argv []string, dir string, p Prelude) (string, error) {
	return remoteCommand(argv, dir, p)
}
