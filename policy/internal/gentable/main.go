// Command gentable rewrites the trust table in SECURITY.md from the policy package's key table:
// everything between policy.TableStart and policy.TableEnd is replaced. Run it with
// `make security-table` or `go generate ./policy`.
package main

import (
	"fmt"
	"os"

	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/policy"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gentable SECURITY.md")
		os.Exit(2)
	}
	path := os.Args[1]
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gentable:", err)
		os.Exit(1)
	}
	out, err := policy.ReplaceTrustTable(string(data))
	if err != nil {
		fmt.Fprintf(os.Stderr, "gentable: %s: %v\n", path, err)
		os.Exit(1)
	}
	if err := atomicfile.Write(path, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gentable:", err)
		os.Exit(1)
	}
}
