// Package shellquote is the one way git corral writes a value into a POSIX shell command line,
// a shell script, a systemd unit or an SSH command: one single-quoted word, in which nothing is
// special (no expansion, no word splitting), with each single quote written as '\”.
//
// Rules:
//   - NUL is refused everywhere: no shell string can hold it, and sshd, execve and every line
//     reader would cut the word there, so what runs would not be what was quoted.
//   - Word keeps a newline literal inside the quotes: a shell reads it as part of the word, so
//     a command line run by a shell (argv over SSH) means what it says.
//   - Line also refuses newline and carriage return, for values that must stay on one line
//     whatever reads them later: a script another tool reads line by line, a systemd unit, a
//     sudoers or sshd configuration, an expectations file of one path per line.
//
// It owns no policy on what a value may be (a user name, a package name): the packages that
// render those check them first.
package shellquote

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsafe is returned for a value that cannot be quoted safely for where it goes.
var ErrUnsafe = errors.New("unsafe value")

// Word returns s as one single-quoted shell word, or an error when s holds a NUL.
func Word(s string) (string, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return "", fmt.Errorf("%w: %q holds a NUL at byte %d", ErrUnsafe, s, i)
	}
	return quote(s), nil
}

// Line returns s as one single-quoted shell word that stays on one line, or an error when s
// holds a NUL, a newline or a carriage return.
func Line(s string) (string, error) {
	if i := strings.IndexAny(s, "\x00\n\r"); i >= 0 {
		return "", fmt.Errorf("%w: %q holds a newline, carriage return or NUL at byte %d", ErrUnsafe, s, i)
	}
	return quote(s), nil
}

// Path quotes a filesystem path as Word does. A path never holds NUL (the kernel refuses it),
// so a NUL here is a programming error and panics rather than quoting something else.
func Path(p string) string {
	q, err := Word(p)
	if err != nil {
		panic(err)
	}
	return q
}

func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
