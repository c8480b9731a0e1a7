// Command git-corral-sandbox is the inside of git corral's light tier: the init and exec steps
// that 'git corral sandbox' runs inside bubblewrap. It is a separate, small binary so that each
// sandboxed command pays for two starts of it rather than of the whole of git corral (whose
// package initialisers, Lima's among them, cost tens of milliseconds and need a passwd entry);
// git corral falls back to re-executing itself ('git corral sandbox --stage NAME') when it is
// not installed beside it.
package main

import (
	"fmt"
	"os"

	"github.com/git-corral/git-corral/sandbox/inside"
)

func main() {
	if len(os.Args) != 4 || os.Args[1] != "sandbox" || os.Args[2] != "--stage" {
		fmt.Fprintln(os.Stderr, "git-corral-sandbox: run by 'git corral sandbox' inside its sandbox; not for direct use")
		os.Exit(129)
	}
	os.Exit(inside.Stage(os.Args[3]))
}
