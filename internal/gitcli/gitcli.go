// Package gitcli is git corral's one wrapper around the git program. Every call takes a context,
// builds its argv with a pure function, never goes through a shell, and reports failures with the
// command and the tail of git's stderr.
//
// git corral asks git itself about the repository (rev-parse, config --list) because go-git v5
// ignores GIT_DIR, git -c and include/includeIf.
package gitcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Git runs git in a directory. Env, when non-nil, is appended to the process environment.
type Git struct {
	// Dir is the directory git runs in (as with git -C).
	Dir string
	// Env holds extra KEY=value entries; nil means the inherited environment only.
	Env []string
	// Stdin, when not nil, is git's standard input (update-ref --stdin takes ref names there).
	Stdin io.Reader
}

// Error is a failed git command: its argv, exit code and the tail of its stderr.
type Error struct {
	Args     []string
	ExitCode int
	Stderr   string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("git %s: exit status %d", strings.Join(e.Args, " "), e.ExitCode)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// Output runs git with args and returns its stdout.
func (g Git) Output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.Dir
	cmd.Stdin = g.Stdin
	if g.Env != nil {
		cmd.Env = append(cmd.Environ(), g.Env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.Bytes(), &Error{Args: args, ExitCode: ee.ExitCode(), Stderr: Tail(stderr.String(), 400)}
		}
		return stdout.Bytes(), fmt.Errorf("run git %s: %w", strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}

// Tail returns the last n bytes of s, trimmed, prefixed with "…" when cut.
func Tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
