package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/session"
	"github.com/git-corral/git-corral/vm"
)

// egressConfig returns the effective network mode and allow-list of the box, loaded as start
// loads it. The box must be this repository's: its configuration lives with its checkout.
func egressConfig(ctx context.Context, a *app, box string) (*policy.Config, string, error) {
	opts, err := a.loadOptions(ctx, "")
	if err != nil {
		return nil, "", err
	}
	own, err := a.boxName(ctx) // name, when set, selects the box; opts.Box keys the configuration
	if err != nil {
		return nil, "", err
	}
	if own != box {
		return nil, "", withHint(fmt.Errorf("box %q is not the box of this repository (%q)", box, own),
			"run 'git corral egress' in the box's checkout to see its mode and allow-list")
	}
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	meta, _ := (&vm.Manager{Home: opts.Home}).ReadMeta(box) // an old full box keeps full (session.NetworkFor)
	return session.KeptDefaultNetwork(meta, eff.Config), "effective configuration (git corral config shows each origin)", nil
}

// suggestWarning is printed with every --suggest answer.
const suggestWarning = "every allowed destination is also a way for data to leave the box: allow only what the work needs"

type egressDest struct {
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	Decision string    `json:"decision"`
	Count    int       `json:"count"`
	Last     time.Time `json:"last"`
	Reason   string    `json:"reason,omitempty"`
}

type egressDoc struct {
	Box          string       `json:"box"`
	Mode         string       `json:"mode"`
	ConfigSource string       `json:"configSource"`
	Allow        []string     `json:"allow"`
	Log          string       `json:"log"`
	Destinations []egressDest `json:"destinations"`
	BadLines     int          `json:"badLines"`
}

type suggestDoc struct {
	Box         string   `json:"box"`
	File        string   `json:"file"`
	Suggestions []string `json:"suggestions"`
	Warning     string   `json:"warning"`
}

func defineEgress(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print JSON")
	denials := fs.Int("denials", 0, "show the last N denials")
	showLog := fs.Bool("log", false, "print every log entry")
	suggest := fs.Bool("suggest", false, "turn denials into allow-list lines")
	sandboxLog := fs.Bool("sandbox", false, "the broker decisions of git corral sandbox, not a box's")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("egress", "egress takes no arguments")
		}
		if *denials < 0 {
			return usageErrorf("egress", "--denials must be a positive count, got %d", *denials)
		}
		if *sandboxLog {
			if *suggest {
				return usageErrorf("egress", "--suggest writes a box's allow-list; a sandbox's is the manifest's network.allow")
			}
			return a.sandboxEgress(*showLog, *denials, *jsonOut)
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return err
		}
		entries, bad, err := broker.ReadLog(h.EgressLog(box))
		if err != nil {
			return err
		}
		switch {
		case *showLog:
			return a.printEgressLog(entries, *jsonOut)
		case *denials > 0:
			return a.printEgressLog(lastDenials(entries, *denials), *jsonOut)
		case *suggest:
			return a.printSuggestions(suggestDoc{Box: box, File: h.ProjectConfig(box), Suggestions: suggestions(entries), Warning: suggestWarning}, *jsonOut)
		}
		cfg, source, err := egressConfig(ctx, a, box)
		if err != nil {
			return err
		}
		doc := egressDoc{Box: box, Mode: string(cfg.Network), ConfigSource: source, Allow: append([]string{}, cfg.Egress...),
			Log: h.EgressLog(box), Destinations: summarize(entries), BadLines: bad}
		if *jsonOut {
			return a.printJSON(doc)
		}
		a.printEgressSummary(doc)
		return nil
	}
}

// summarize counts attempts per destination and decision, denials first, then by count.
func summarize(entries []broker.Entry) []egressDest {
	idx := map[string]*egressDest{}
	for _, e := range entries {
		key := fmt.Sprintf("%s\x00%d\x00%s", e.Host, e.Port, e.Decision)
		d := idx[key]
		if d == nil {
			d = &egressDest{Host: e.Host, Port: e.Port, Decision: e.Decision}
			idx[key] = d
		}
		d.Count++
		if !e.Time.Before(d.Last) {
			d.Last, d.Reason = e.Time, e.Reason
		}
	}
	out := make([]egressDest, 0, len(idx))
	for _, d := range idx {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Decision != b.Decision {
			return a.Decision == broker.Deny
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Host < b.Host || a.Host == b.Host && a.Port < b.Port
	})
	return out
}

func lastDenials(entries []broker.Entry, n int) []broker.Entry {
	var out []broker.Entry
	for i := len(entries) - 1; i >= 0 && len(out) < n; i-- {
		if entries[i].Decision == broker.Deny {
			out = append(out, entries[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// suggestions turns names refused for not being listed into allow-list entries. Only names that
// normalise cleanly are suggested, so the lines are safe to paste into TOML; destinations refused
// for their address are never suggested: allowing those takes a deliberate address entry.
func suggestions(entries []broker.Entry) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		if e.Decision != broker.Deny || e.Reason != "host not in allow-list" || e.Port <= 0 || e.Port > 65535 {
			continue
		}
		a, err := broker.ParseAuthority(fmt.Sprintf("%s:%d", e.Host, e.Port), 0)
		if err != nil || a.Host == "" {
			continue
		}
		line := a.Host
		if a.Port != 80 && a.Port != 443 {
			line = a.String()
		}
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}

func (a *app) printEgressLog(entries []broker.Entry, jsonOut bool) error {
	if jsonOut {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, e := range entries {
		why := e.Rule
		if e.Decision == broker.Deny {
			why = e.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", e.Time.Local().Format(time.DateTime), e.Method,
			e.Status, e.Decision, visible.String(hostPort(e.Host, e.Port)), visible.String(e.Addr), visible.String(why))
	}
	return tw.Flush()
}

func (a *app) printSuggestions(doc suggestDoc, jsonOut bool) error {
	if jsonOut {
		return a.printJSON(doc)
	}
	fmt.Fprintf(a.stderr, "corral: warning: %s\n", doc.Warning)
	if len(doc.Suggestions) == 0 {
		fmt.Fprintln(a.stderr, "corral: no refused host names to suggest")
		return nil
	}
	fmt.Fprintf(a.stdout, "# for %s\negress = [\n", visible.String(doc.File))
	for _, s := range doc.Suggestions {
		fmt.Fprintf(a.stdout, "  %q,\n", s)
	}
	fmt.Fprintln(a.stdout, "]")
	return nil
}

func (a *app) printEgressSummary(doc egressDoc) {
	fmt.Fprintf(a.stdout, "box:    %s\nmode:   %s (%s)\n", doc.Box, doc.Mode, doc.ConfigSource)
	fmt.Fprintf(a.stdout, "allow:  %s\n", visible.String(strings.Join(doc.Allow, ", ")))
	fmt.Fprintf(a.stdout, "log:    %s\n", visible.String(doc.Log))
	if doc.BadLines > 0 {
		fmt.Fprintf(a.stderr, "corral: warning: %d egress log lines are not valid entries\n", doc.BadLines)
	}
	printDestinations(a.stdout, doc.Destinations)
}

// printDestinations prints the summary table of destinations, or says there were none.
func printDestinations(w io.Writer, dests []egressDest) {
	if len(dests) == 0 {
		fmt.Fprintln(w, "no connection attempts logged")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DECISION\tCOUNT\tDESTINATION\tLAST\tREASON")
	for _, d := range dests {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", d.Decision, d.Count, visible.String(hostPort(d.Host, d.Port)),
			d.Last.Local().Format(time.DateTime), visible.String(d.Reason))
	}
	tw.Flush()
}

func hostPort(host string, port int) string {
	if port == 0 {
		return host
	}
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}
