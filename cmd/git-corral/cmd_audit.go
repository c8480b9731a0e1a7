package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/sandbox"
)

func defineAudit(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print JSON Lines, one record per line")
	last := fs.IntP("lines", "n", 20, "show the last N records (0: all)")
	boxFlag := fs.String("box", "", "only records of this box")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("audit", "audit takes no arguments")
		}
		if *last < 0 {
			return usageErrorf("audit", "-n must be 0 or more, got %d", *last)
		}
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return err
		}
		box := *boxFlag
		if box == "" {
			box = a.box
		}
		res, err := audit.Read(h.SessionsLog(), audit.Filter{Box: box})
		if err != nil {
			return err
		}
		if res.Bad > 0 {
			fmt.Fprintf(a.stderr, "corral: warning: %d lines of %s are not audit records\n", res.Bad, h.SessionsLog())
		}
		sb := &sandbox.LogContents[broker.Entry]{}
		if box == "" {
			if sb, err = sandbox.ReadLog[broker.Entry](sandbox.LogPath(h.Dir)); err != nil {
				return err
			}
			if sb.Bad > 0 {
				fmt.Fprintf(a.stderr, "corral: warning: %d lines of %s are neither sandbox runs nor broker decisions\n", sb.Bad, sandbox.LogPath(h.Dir))
			}
		}
		lines := auditLines(res.Records, sb.Runs, *last)
		if *jsonOut {
			enc := json.NewEncoder(a.stdout)
			enc.SetEscapeHTML(false)
			for _, l := range lines {
				if err := enc.Encode(l.asJSON); err != nil {
					return err
				}
			}
			return nil
		}
		for _, l := range lines {
			fmt.Fprintln(a.stdout, l.text)
		}
		return nil
	}
}

// formatRecord renders one record on one line, every untrusted field escaped.
func formatRecord(r audit.Record) string {
	parts := []string{r.Time.Local().Format("2006-01-02 15:04:05"), fmt.Sprintf("%-14s", r.Event)}
	if r.Box != "" {
		parts = append(parts, "box="+r.Box)
	}
	if r.Network != "" {
		parts = append(parts, "network="+r.Network)
	}
	if r.ExitCode != nil {
		parts = append(parts, fmt.Sprintf("exit=%d", *r.ExitCode))
	}
	if r.DurationMs > 0 {
		parts = append(parts, fmt.Sprintf("took=%.1fs", float64(r.DurationMs)/1000))
	}
	if r.SSHAgent {
		parts = append(parts, "ssh-agent=forwarded")
	}
	if len(r.EnvNames) > 0 {
		parts = append(parts, "env="+strings.Join(r.EnvNames, ","))
	}
	if len(r.Argv) > 0 {
		parts = append(parts, "argv="+strings.Join(r.Argv, " "))
	}
	if r.Detail != "" {
		parts = append(parts, r.Detail)
	}
	return visible.String(strings.Join(parts, " "))
}
