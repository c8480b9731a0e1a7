package front

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/project"
)

// Report prints err as git corral's report does ("corral: error: …", then "corral: hint: …";
// cmd/git-corral/app.go) and returns the exit code: a Status passes through silently, an
// *Error gives its code, a directory in no repository or a bare one 128, anything else 1.
// cmd/git-corral-front TestFrontAnswersAsFull holds the two to the same bytes.
func Report(e Env, err error) int {
	if err == nil {
		return 0
	}
	var st Status
	if errors.As(err, &st) {
		return int(st)
	}
	code, h := 1, hint.Of(err)
	var fe *Error
	if errors.As(err, &fe) {
		code = fe.Code
		if fe.Hint != "" {
			h = fe.Hint
		}
	}
	if ph, ok := project.Hint(err); ok {
		code = exitNoRepo
		if h == "" {
			h = ph
		}
	}
	label := "error"
	if colorOn(e) {
		label = "\x1b[1;31merror\x1b[0m"
	}
	fmt.Fprintf(e.Stderr, "corral: %s: %s\n", label, visible.Lines(err.Error()))
	if h != "" {
		fmt.Fprintf(e.Stderr, "corral: hint: %s\n", visible.Lines(h))
	}
	return code
}

// colorOn reports whether stderr should get colour: a terminal, NO_COLOR unset, TERM set and
// not dumb.
func colorOn(e Env) bool {
	if e.Getenv("NO_COLOR") != "" || e.Getenv("TERM") == "dumb" || e.Getenv("TERM") == "" {
		return false
	}
	f, ok := e.Stderr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
