// Command git-corral runs coding agents and untrusted repositories inside a per-project Linux VM
// (a "box"). Installed on PATH as git-corral, it is run as `git corral`.
//
// main is thin: it parses flags, calls the library packages and formats their answers. Only
// main() calls os.Exit.
package main

import (
	"context"
	"os"

	"github.com/git-corral/git-corral/internal/trace"
)

// Set at build time with -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "devel"
	commit  = "unknown"
)

func main() {
	a := &app{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
	}
	done := trace.Step("main")
	code := a.main(context.Background(), os.Args[1:])
	done()
	os.Exit(code)
}
