package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/session"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/diff"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

func defineStop(fs *pflag.FlagSet) runFunc {
	all := fs.Bool("all", false, "stop every running box")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("stop", "stop takes no arguments")
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		var boxes []string
		if *all {
			sts, err := m.Boxes()
			if err != nil {
				return err
			}
			for _, s := range sts {
				if s.Status == "Running" {
					boxes = append(boxes, s.Name)
				}
			}
		} else {
			b, err := a.boxName(ctx)
			if err != nil {
				return err
			}
			boxes = []string{b}
		}
		for _, b := range boxes {
			if err := a.stopBox(ctx, m, b); err != nil {
				return err
			}
		}
		return nil
	}
}

func (a *app) stopBox(ctx context.Context, m *vm.Manager, box string) error {
	unlock, err := m.Lock(ctx, box, func() { a.notice("waiting for another git corral working on box " + box) })
	if err != nil {
		return err
	}
	defer unlock()
	st, err := m.Inspect(box)
	if err != nil {
		return err
	}
	if !st.Exists() {
		return withHint(fmt.Errorf("stop box %s: %w", box, vm.ErrNoBox), "'git corral list' shows the boxes")
	}
	if st.Status != "Running" {
		fmt.Fprintf(a.stderr, "box %s is already %s\n", box, strings.ToLower(st.Status))
		return nil
	}
	if err := m.Stop(ctx, box); err != nil {
		return withHint(err, "'git corral logs' shows what Lima said")
	}
	a.stopBroker(m, box)
	fmt.Fprintf(a.stderr, "box %s stopped\n", box)
	return nil
}

// stopBroker ends the box's broker child, which lives as long as the box runs.
func (a *app) stopBroker(m *vm.Manager, box string) {
	meta, err := m.ReadMeta(box)
	if err != nil || meta.BrokerPID == 0 {
		return
	}
	if err := broker.StopChild(meta.BrokerPID, box); err != nil {
		a.notice(err.Error())
		return
	}
	meta.BrokerPID = 0
	if err := m.WriteMeta(meta); err != nil {
		a.notice(err.Error())
	}
}

func defineDelete(fs *pflag.FlagSet) runFunc {
	yes := fs.BoolP("yes", "y", false, "delete without asking")
	keepAgentState := fs.Bool("keep-agent-state", false, "keep the box's agent logins and history ($CORRAL_HOME/agents/state/BOX) for a box made again")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("delete", "delete takes no arguments")
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		if !*yes {
			if !a.isTerminal(a.stdin) || !a.isTerminal(a.stderr) {
				return withHint(fmt.Errorf("delete box %s: refusing without a terminal to ask", box), "pass --yes to delete it")
			}
			what := "everything inside it and its agent logins"
			if *keepAgentState {
				what = "everything inside it"
			}
			fmt.Fprintf(a.stderr, "Delete box %s and %s (the project on the host stays)? [y/N] ", box, what)
			line, _ := bufio.NewReader(a.stdin).ReadString('\n')
			if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
				return errors.New("delete declined")
			}
		}
		unlock, err := m.Lock(ctx, box, func() { a.notice("waiting for another git corral working on box " + box) })
		if err != nil {
			return err
		}
		defer unlock()
		if st, err := m.Inspect(box); err != nil {
			return err
		} else if !st.Exists() {
			return withHint(fmt.Errorf("delete box %s: %w", box, vm.ErrNoBox), "'git corral list' shows the boxes")
		}
		a.stopBroker(m, box)
		if err := m.Delete(ctx, box); err != nil {
			return withHint(err, "'git corral logs' shows what Lima said")
		}
		if err := diff.PruneBox(m.Home, box); err != nil { // session bases hold copies of ignored files
			return err
		}
		if !*keepAgentState { // agent logins: a token on the host that nothing would use again
			if err := session.RemoveAgentState(m.Home, box); err != nil {
				return withHint(err, "remove it by hand, or pass --keep-agent-state")
			}
		}
		fmt.Fprintf(a.stderr, "box %s deleted\n", box)
		return nil
	}
}

type listEntry struct {
	Box     string `json:"box"`
	Status  string `json:"status"`
	Project string `json:"project"`
	Network string `json:"network"`
	TCG     bool   `json:"tcg"`
	// Drift is true when the template git corral would render now differs from the box's.
	Drift bool `json:"drift"`
	// DriftReason says what differs.
	DriftReason string `json:"driftReason,omitempty"`
}

func defineList(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("list", "list takes no arguments")
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		sts, err := m.Boxes()
		if err != nil {
			return err
		}
		entries := []listEntry{}
		for _, s := range sts {
			entries = append(entries, a.listEntry(ctx, m, s))
		}
		if *jsonOut {
			return a.printJSON(entries)
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BOX\tSTATUS\tNETWORK\tDRIFT\tPROJECT")
		for _, e := range entries {
			drift := "-"
			if e.Drift {
				drift = e.DriftReason
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Box, e.Status, e.Network, drift, visible.String(e.Project))
		}
		return tw.Flush()
	}
}

// listEntry re-renders a box's template from its recorded inputs and compares it.
func (a *app) listEntry(ctx context.Context, m *vm.Manager, s vm.Status) listEntry {
	e := listEntry{Box: s.Name, Status: s.Status}
	meta, err := m.ReadMeta(s.Name)
	if err != nil {
		e.Drift, e.DriftReason = true, "no git corral metadata"
		return e
	}
	e.Project, e.Network, e.TCG = meta.Project, meta.Network, meta.TCG
	cfg, bundle, err := a.boxInputs(ctx, m, meta)
	if err != nil {
		e.Drift, e.DriftReason = true, "cannot render: "+err.Error()
		return e
	}
	spec := vm.BoxSpec{Box: s.Name, ProjectDir: meta.Project, NoProjectMount: meta.NoProjectMount, GitMounts: meta.GitMounts, Config: cfg, Bundle: bundle}
	if !meta.NoProjectMount { // the box's extra and agent mounts, as a session renders them
		if spec.ExtraMounts, err = session.ExtraMounts(m.Home, cfg, meta.Project, a.getenv); err != nil {
			e.Drift, e.DriftReason = true, "cannot render: "+err.Error()
			return e
		}
		spec.Agents = session.AgentMountSet(m.Home, s.Name, cfg.AgentState, a.getenv("HOME"))
	}
	r, err := m.RenderBox(ctx, spec, meta.TCG)
	switch {
	case err != nil:
		e.Drift, e.DriftReason = true, "cannot render: "+err.Error()
	case r.Image.Hash != meta.Image:
		e.Drift, e.DriftReason = true, "base image changed"
	case r.Hash != meta.TemplateHash:
		e.Drift, e.DriftReason = true, "template changed"
	}
	return e
}

func defineLogs(fs *pflag.FlagSet) runFunc {
	serial := fs.Bool("serial", false, "print the guest's serial console log instead")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("logs", "logs takes no arguments")
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		m, err := a.manager()
		if err != nil {
			return err
		}
		files := []string{m.LogPath(box), filepath.Join(m.Home.LimaHome(), box, "ha.stderr.log")}
		if *serial {
			files = []string{filepath.Join(m.Home.LimaHome(), box, "serial.log")}
		}
		found := false
		for _, f := range files {
			if err := a.catLog(f); err == nil {
				found = true
			}
		}
		if !found {
			return withHint(fmt.Errorf("no logs for box %s", box), "'git corral list' shows the boxes")
		}
		return nil
	}
}

// catLog prints one log file with a header, escaping what the guest may have written.
func (a *app) catLog(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(a.stdout, "==> %s <==\n", path)
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	_, err = io.WriteString(a.stdout, visible.Lines(string(b)))
	return err
}

// configBox keys the per-project configuration file of the box meta describes: the name
// derived from its project, as start reads it, also for a box that name chose.
func configBox(meta vm.Meta) string {
	if meta.Project == "" {
		return meta.Box
	}
	return project.BoxName(meta.Project)
}

// boxInputs loads what a box's template is rendered from now, as start would: the effective
// configuration of its project and, for a mounted project, the guest scripts.
func (a *app) boxInputs(ctx context.Context, m *vm.Manager, meta vm.Meta) (*policy.Config, provision.Bundle, error) {
	if meta.NoProjectMount {
		cfg, err := session.LoadConfig(ctx, session.Request{Network: meta.Network}, policy.LoadOptions{Home: m.Home, TopLevel: meta.Project, Box: configBox(meta)})
		if err != nil {
			return nil, provision.Bundle{}, err
		}
		return session.KeptDefaultNetwork(meta, cfg), provision.Bundle{}, nil
	}
	p, err := project.Find(ctx, meta.Project)
	if err != nil {
		return nil, provision.Bundle{}, err
	}
	eff, err := policy.Load(ctx, policy.LoadOptions{Home: m.Home, TopLevel: p.TopLevel, Box: configBox(meta)})
	if err != nil {
		return nil, provision.Bundle{}, err
	}
	cfg := session.KeptDefaultNetwork(meta, eff.Config) // an old full box is not drift
	_, bundle, err := session.RenderGuest(ctx, p, m.Home, meta.Box, cfg, meta.BrokerPort)
	if err != nil {
		return nil, provision.Bundle{}, err
	}
	return cfg, bundle, nil
}
