package vm

import (
	"context"
	"errors"
	"io"

	"github.com/git-corral/git-corral/internal/visible"
)

// Guest is a box's SSH client as a command runner (clone.Guest): the client quotes argv for the
// remote shell, streams stdin and stdout, sends Env in the SSH channel, and shows the guest's
// stderr on Stderr with control, bidi and zero-width characters escaped.
type Guest struct {
	C      *Client
	Stderr io.Writer
	Env    map[string]string
}

// Exec runs argv in the box; a non-zero guest status is returned as the status, not an error.
func (g *Guest) Exec(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (int, error) {
	code, err := g.C.Run(ctx, SessionOptions{Argv: argv, Env: g.Env, Stdin: stdin, Stdout: stdout, Stderr: &visible.Writer{W: g.Stderr}})
	var es ExitStatus
	if errors.As(err, &es) {
		return code, nil
	}
	return code, err
}
