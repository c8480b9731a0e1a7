package main

// The light tier's log ($CORRAL_HOME/logs/sandbox.jsonl) as 'git corral audit' and 'git corral
// egress --sandbox' render it: runs beside the box records, broker decisions beside a box's.
// Every array of the JSON forms is present (empty, never null), and every string that came
// from the sandboxed command (argv, paths, names) is escaped in the text forms.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/sandbox"
)

// formatSandboxRun renders one run on one line, in the shape of formatRecord: what ran, under
// which manifest, how it ended (the limit that ended it), and what it asked for and did not
// get (env.pass names the host lacked, a layer accepted missing, a refusal before it ran).
func formatSandboxRun(r sandbox.Record) string {
	parts := []string{r.Time.Local().Format("2006-01-02 15:04:05"), fmt.Sprintf("%-14s", r.Event)}
	if r.Error != "" {
		parts = append(parts, "refused")
	} else {
		parts = append(parts, fmt.Sprintf("exit=%d", r.ExitCode))
	}
	if r.Limit != "" {
		if r.LimitDefault {
			parts = append(parts, "limit="+r.Limit+"(default)")
		} else {
			parts = append(parts, "limit="+r.Limit)
		}
	}
	if r.Signal != "" {
		parts = append(parts, "signal="+r.Signal)
	}
	if r.DurationMs > 0 {
		parts = append(parts, fmt.Sprintf("took=%.1fs", r.DurationMs/1000))
	}
	if r.Manifest != "" || r.ManifestDigest != "" {
		parts = append(parts, "manifest="+strings.TrimPrefix(r.Manifest+"@"+r.ManifestDigest, "@"))
	}
	if r.NarrowedBy != "" {
		parts = append(parts, "narrowedBy="+r.NarrowedBy)
	}
	g := r.Granted
	for _, kv := range []struct {
		k string
		v []string
	}{{"read", g.Read}, {"write", g.Write}, {"exec", g.Exec}, {"network", g.Network}, {"env", g.Env}, {"envUnset", r.EnvUnset}} {
		if len(kv.v) > 0 {
			parts = append(parts, kv.k+"="+strings.Join(kv.v, ","))
		}
	}
	if r.Weaker != "" {
		parts = append(parts, fmt.Sprintf("weaker=%q", r.Weaker))
	}
	if r.Error != "" {
		parts = append(parts, fmt.Sprintf("error=%q", r.Error))
	}
	parts = append(parts, "argv="+strings.Join(r.Argv, " "))
	return visible.String(strings.Join(parts, " "))
}

// auditLine is one line of 'git corral audit': a box record or a sandboxed run.
type auditLine struct {
	at     time.Time
	text   string
	asJSON any
}

// auditLines merges the box records with the sandbox's runs in time order (a stable merge, so
// each log keeps its own order) and keeps the last n (0: all). Runs are shown only when no box
// was asked for: they belong to no box.
func auditLines(records []audit.Record, runs []sandbox.Record, n int) []auditLine {
	out := make([]auditLine, 0, len(records)+len(runs))
	for _, r := range records {
		out = append(out, auditLine{at: r.Time, text: formatRecord(r), asJSON: r})
	}
	for _, r := range runs {
		out = append(out, auditLine{at: r.Time, text: formatSandboxRun(r), asJSON: r.WithArrays()})
	}
	slices.SortStableFunc(out, func(a, b auditLine) int { return a.at.Compare(b.at) })
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// sandboxEgressDoc is 'egress --sandbox --json': the sandbox's broker decisions, summarised.
type sandboxEgressDoc struct {
	Log          string       `json:"log"`
	Destinations []egressDest `json:"destinations"`
	BadLines     int          `json:"badLines"`
}

// sandboxEgress prints the broker decisions of sandboxed runs: a summary per destination, or
// every decision (showLog), or the last denials, as 'egress' does for a box.
func (a *app) sandboxEgress(showLog bool, denials int, jsonOut bool) error {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return err
	}
	path := sandbox.LogPath(h.Dir)
	c, err := sandbox.ReadLog[broker.Entry](path)
	if err != nil {
		return err
	}
	switch {
	case showLog:
		return a.printEgressLog(c.Decisions, jsonOut)
	case denials > 0:
		return a.printEgressLog(lastDenials(c.Decisions, denials), jsonOut)
	}
	doc := sandboxEgressDoc{Log: path, Destinations: summarize(c.Decisions), BadLines: c.Bad}
	if jsonOut {
		return a.printJSON(doc)
	}
	fmt.Fprintf(a.stdout, "log:    %s\n", visible.String(doc.Log))
	if doc.BadLines > 0 {
		fmt.Fprintf(a.stderr, "corral: warning: %d lines of %s are neither sandbox runs nor broker decisions\n", doc.BadLines, path)
	}
	printDestinations(a.stdout, doc.Destinations)
	return nil
}
