package provision

// This file holds the one way a value enters a guest script or a file those scripts install:
// every value is checked for characters that could end a line or a string (newline, carriage
// return, NUL) and then single-quoted, so that no value can add a command, an option or a
// configuration line of its own.

import (
	"errors"
	"fmt"
	"github.com/git-corral/git-corral/internal/lazyre"
	"github.com/git-corral/git-corral/internal/shellquote"
	"strings"
)

// ErrUnsafeValue is returned for a value that cannot be interpolated safely.
var ErrUnsafeValue = errors.New("unsafe value")

// checkLine refuses a value holding a line break or NUL: what is one value must stay one line
// in a shell script, a systemd unit, a sudoers file or an sshd configuration.
func checkLine(what, v string) error {
	if i := strings.IndexAny(v, "\n\r\x00"); i >= 0 {
		return fmt.Errorf("%w: %s %q holds a newline, carriage return or NUL at byte %d", ErrUnsafeValue, what, v, i)
	}
	return nil
}

// ShellQuote returns v as one single-quoted POSIX shell word, or an error when v holds a
// newline, carriage return or NUL. A single quote inside v becomes '\” .
func ShellQuote(what, v string) (string, error) {
	if err := checkLine(what, v); err != nil {
		return "", err
	}
	return shellquote.Line(v)
}

// userRE is the guest user names git corral accepts: what useradd accepts by default, minus
// anything sudoers or a shell would read as syntax.
var userRE = lazyre.New(`^[a-z_][a-z0-9_-]{0,31}$`)

// checkUser refuses a guest user name that is not a plain lower-case name. It is written
// unquoted into sudoers, where quoting does not exist.
func checkUser(u string) error {
	if !userRE.MatchString(u) {
		return fmt.Errorf("%w: guest user %q: want a lower-case name matching %s", ErrUnsafeValue, u, userRE)
	}
	return nil
}

// packageRE is a Debian package name (Debian Policy 5.6.1), optionally with an architecture.
var packageRE = lazyre.New(`^[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+)?$`)

// checkPackage refuses a package name that apt would read as an option or a pattern.
func checkPackage(p string) error {
	if !packageRE.MatchString(p) {
		return fmt.Errorf("%w: package %q: want a Debian package name matching %s", ErrUnsafeValue, p, packageRE)
	}
	return nil
}

// checkPath refuses a guest path that is not absolute and clean or that holds a line break.
func checkPath(what, p string) error {
	if err := checkLine(what, p); err != nil {
		return err
	}
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return fmt.Errorf("%w: %s %q: want an absolute path without '..'", ErrUnsafeValue, what, p)
	}
	return nil
}
