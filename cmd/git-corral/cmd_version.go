package main

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/vm"
)

type versionInfo struct {
	Version string     `json:"version"`
	Commit  string     `json:"commit"`
	Go      string     `json:"go"`
	Lima    *limaFound `json:"lima"`
}

type limaFound struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

func defineVersion(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("version", "version takes no arguments")
		}
		v := versionInfo{Version: version, Commit: commit, Go: runtime.Version()}
		limaErr := ""
		if path, err := vm.FindLimactl(a.getenv); err != nil {
			limaErr = err.Error()
		} else if lv, err := vm.LimactlVersion(ctx, path); err != nil {
			limaErr = err.Error()
		} else {
			v.Lima = &limaFound{Path: path, Version: lv}
		}
		if *jsonOut {
			return a.printJSON(v)
		}
		fmt.Fprintf(a.stdout, "git corral %s (commit %s)\n", v.Version, v.Commit)
		fmt.Fprintf(a.stdout, "go         %s\n", v.Go)
		if v.Lima != nil {
			fmt.Fprintf(a.stdout, "lima       %s (%s)\n", v.Lima.Version, v.Lima.Path)
		} else {
			fmt.Fprintf(a.stdout, "lima       not found: %s\n", limaErr)
		}
		return nil
	}
}
