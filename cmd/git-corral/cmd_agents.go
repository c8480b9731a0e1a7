package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
)

// agentsVerbs are the verbs of git corral agents.
var agentsVerbs = []string{"list", "install", "update", "login", "logins", "logout", "verify", "export", "import"}

func defineAgents(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	version := fs.String("version", "", "install this exact version instead of the pinned one (install)")
	as := fs.String("as", "", "the host-held login's name (login; logout --host); default: the agent's name")
	importFile := fs.String("import", "", "store the refreshable login of this credentials file instead of a token from stdin (login)")
	hostLogin := fs.Bool("host", false, "forget the host-held login instead of a box's login state (logout)")
	return func(ctx context.Context, a *app, args []string) error {
		verb := "list"
		if len(args) > 0 {
			verb, args = args[0], args[1:]
		}
		want := map[string]int{"list": 0, "verify": 0, "logins": 0, "install": 1, "update": 1, "login": 1, "logout": 1, "export": 1, "import": 1}
		n, ok := want[verb]
		if !ok {
			return usageErrorf("agents", "unknown agents verb %q (%s)", verb, strings.Join(agentsVerbs, ", "))
		}
		if len(args) != n {
			return usageErrorf("agents", "agents %s takes %d argument(s), got %d", verb, n, len(args))
		}
		if *version != "" && verb != "install" {
			return usageErrorf("agents", "--version goes with agents install only")
		}
		if (*as != "" && verb != "login" && !(verb == "logout" && *hostLogin)) || (*importFile != "" && verb != "login") || (*hostLogin && verb != "logout") {
			return usageErrorf("agents", "--as goes with agents login and logout --host, --import with login, --host with logout")
		}
		var agent agents.Agent
		if n == 1 && verb != "export" && verb != "import" {
			var err error
			if agent, err = agents.Lookup(args[0]); err != nil {
				return withCode(exitUsage, err, "run 'git corral agents' for the catalogue")
			}
		}
		if a.box != "" && (verb != "logout" || *hostLogin) {
			return usageErrorf("agents", "--box goes with agents logout only")
		}
		switch verb {
		case "login", "logins", "logout":
			if verb != "logout" || *hostLogin {
				return a.agentsHostLogin(verb, agent, *as, *importFile, *jsonOut)
			}
		}
		s, h, err := a.agentStore(ctx)
		if err != nil {
			return err
		}
		switch verb {
		case "install", "update":
			s.FullCheck()
			return a.agentsInstall(ctx, s, agent, *version, verb == "update", *jsonOut)
		case "logout":
			return a.agentsLogout(ctx, h, agent, *jsonOut)
		case "verify":
			return a.agentsVerify(ctx, s, *jsonOut)
		case "export":
			return a.agentsExport(ctx, s, args[0])
		case "import":
			return a.agentsImport(ctx, s, args[0])
		}
		return a.agentsList(s, *jsonOut)
	}
}

// agentStore opens the store of $CORRAL_HOME with the trusted global configuration's
// agent_min_age and agent_versions (the store is shared by every box, so no repository's
// files are read).
func (a *app) agentStore(ctx context.Context) (*agents.Store, home.Home, error) {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return nil, h, err
	}
	eff, err := policy.Load(ctx, policy.LoadOptions{Home: h})
	if err != nil {
		return nil, h, withHint(err, "fix "+h.GlobalConfig()+"; 'git corral config check' lists every problem")
	}
	plat, err := agents.PlatformForArch(runtime.GOARCH)
	if err != nil {
		return nil, h, err
	}
	return agents.Open(h.Dir, agents.TrustedOptions(eff.Config.AgentMinAge, eff.Config.AgentVersions, plat)), h, nil
}

// agentRow is one agent of `git corral agents --json`.
type agentRow struct {
	Name      string          `json:"name"`
	Package   string          `json:"package"`
	Version   string          `json:"version"`
	Installed []installedRow  `json:"installed"`
	Boxes     []agents.BoxUse `json:"boxes"`
	AuthEnv   []string        `json:"authEnv"`
	APIHosts  []string        `json:"apiHosts"`
}

// installedRow is one version of an agent in the store.
type installedRow struct {
	Version string `json:"version"`
	Current bool   `json:"current"`
	Problem string `json:"problem,omitempty"`
}

// agentsDoc is `git corral agents --json`.
type agentsDoc struct {
	Store  string     `json:"store"`
	MinAge string     `json:"minAge"`
	Agents []agentRow `json:"agents"`
}

func (a *app) agentsList(s *agents.Store, jsonOut bool) error {
	doc, err := agentsTable(s)
	if err != nil {
		return err
	}
	if jsonOut {
		return a.printJSON(doc)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tPACKAGE\tVERSION\tIN STORE\tBOXES")
	for _, r := range doc.Agents {
		var inst, boxes []string
		for _, i := range r.Installed {
			v := i.Version
			if i.Current {
				v += "*"
			}
			if i.Problem != "" {
				v += " (damaged: run 'git corral agents verify')"
			}
			inst = append(inst, v)
		}
		for _, b := range r.Boxes {
			boxes = append(boxes, b.Box+"="+b.Version)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Package, r.Version, dash(strings.Join(inst, ", ")), dash(strings.Join(boxes, ", ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n* the version the launcher runs; store %s\n", doc.Store)
	return nil
}

// agentsTable gathers the catalogue, the store and the per-box records.
func agentsTable(s *agents.Store) (agentsDoc, error) {
	doc := agentsDoc{Store: s.Dir(), MinAge: s.MinAge().String(), Agents: []agentRow{}}
	inst, err := s.Installed()
	if err != nil {
		return doc, err
	}
	uses, err := s.Uses()
	if err != nil {
		return doc, err
	}
	boxes := make([]string, 0, len(uses))
	for b := range uses {
		boxes = append(boxes, b)
	}
	sort.Strings(boxes)
	for _, ag := range agents.Catalogue() {
		r := agentRow{Name: ag.Name, Package: ag.Package, Version: s.Version(ag), Installed: []installedRow{},
			Boxes: []agents.BoxUse{}, AuthEnv: ag.AuthEnv, APIHosts: ag.APIHosts}
		for _, i := range inst {
			if i.Name == ag.Name {
				r.Installed = append(r.Installed, installedRow{Version: i.Version, Current: i.Launcher != "", Problem: i.Problem})
			}
		}
		for _, b := range boxes {
			for _, u := range uses[b] {
				if u.Name == ag.Name {
					r.Boxes = append(r.Boxes, agents.BoxUse{Box: b, Version: u.Version})
				}
			}
		}
		doc.Agents = append(doc.Agents, r)
	}
	return doc, nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// agentsInstall fetches, verifies and installs agent (update: the newest release outside the
// age window), with progress on stderr.
func (a *app) agentsInstall(ctx context.Context, s *agents.Store, agent agents.Agent, version string, update, jsonOut bool) error {
	if update {
		v, err := s.Latest(ctx, agent)
		if err != nil {
			return err
		}
		version = v
	}
	inst, err := s.Ensure(ctx, agent, version, prefixed{a.stderr})
	if errors.Is(err, agents.ErrTooNew) {
		return withHint(err, fmt.Sprintf("install an older version with 'git corral agents install %s --version X', or run 'git corral agents update %s' for the newest one outside the window", agent.Name, agent.Name))
	}
	if errors.Is(err, agents.ErrUnsafeArchive) {
		return withHint(err, fmt.Sprintf("nothing of it was installed; install another version with 'git corral agents install %s --version X', and tell the package's maintainers", agent.Name))
	}
	if err != nil {
		return err
	}
	if jsonOut {
		return a.printJSON(inst)
	}
	fmt.Fprintf(a.stdout, "installed %s %s; boxes run it as %s/%s\n", inst.Name, inst.Version, agents.BoxBinDir, inst.Name)
	return nil
}

// agentsLogout removes the agent's login state of the box (--box, else this repository's).
func (a *app) agentsLogout(ctx context.Context, h home.Home, agent agents.Agent, jsonOut bool) error {
	box := a.box
	if box == "" {
		p, err := a.project(ctx)
		if err != nil {
			return withHint(err, "name the box with 'git corral --box BOX agents logout "+agent.Name+"'")
		}
		box = p.Box
	}
	dir, err := agents.StateDir(h.Dir, box, agent.Name)
	if err != nil {
		return err
	}
	_, statErr := os.Lstat(dir)
	removed := statErr == nil
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("log %s out of box %q: %w", agent.Name, box, err)
	}
	if jsonOut {
		return a.printJSON(map[string]any{"box": box, "agent": agent.Name, "removed": removed, "dir": dir})
	}
	if !removed && errors.Is(statErr, fs.ErrNotExist) {
		fmt.Fprintf(a.stdout, "box %s has no %s login (%s)\n", box, agent.Name, dir)
		return nil
	}
	fmt.Fprintf(a.stdout, "removed %s's login of box %s (%s)\n", agent.Name, box, dir)
	return nil
}

// agentsVerify rechecks the store in full; exit 1 when anything was damaged (and deleted), each
// with its reason on stderr.
func (a *app) agentsVerify(ctx context.Context, s *agents.Store, jsonOut bool) error {
	deleted, err := s.Verify(ctx, prefixed{a.stderr})
	if err != nil {
		return err
	}
	if jsonOut {
		if deleted == nil {
			deleted = []string{}
		}
		if err := a.printJSON(map[string][]string{"deleted": deleted}); err != nil {
			return err
		}
	} else if len(deleted) == 0 {
		fmt.Fprintf(a.stdout, "every agent in %s matches its manifest\n", s.Dir())
	}
	if len(deleted) > 0 {
		return withHint(fmt.Errorf("the agent store held what git corral did not install (entries that do not match their manifests, links that leave their package, files or launchers it never wrote); deleted: %s", strings.Join(deleted, ", ")),
			"run 'git corral agents install NAME' to fetch and verify them again")
	}
	return nil
}

// agentsExport writes the checked store to file.
func (a *app) agentsExport(ctx context.Context, s *agents.Store, file string) error {
	names, err := s.Export(ctx, file)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "exported %s from %s\n", strings.Join(names, ", "), s.Dir())
	fmt.Fprintf(a.stdout, "%s\n", file)
	return nil
}

// agentsImport checks file and installs its entries into the store.
func (a *app) agentsImport(ctx context.Context, s *agents.Store, file string) error {
	installed, present, err := s.Import(ctx, file, prefixed{a.stderr})
	if err != nil {
		return withHint(err, "nothing was installed from "+file)
	}
	if len(installed) > 0 {
		fmt.Fprintf(a.stdout, "installed %s into %s\n", strings.Join(installed, ", "), s.Dir())
	}
	if len(present) > 0 {
		fmt.Fprintf(a.stdout, "already in the store: %s\n", strings.Join(present, ", "))
	}
	return nil
}

// prefixed writes progress lines to w behind "corral: ".
type prefixed struct {
	w interface{ Write([]byte) (int, error) }
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := fmt.Fprintf(p.w, "corral: %s", b); err != nil {
		return 0, err
	}
	return len(b), nil
}
