package main

import (
	"sort"
	"strings"

	"context"
	"fmt"
	"github.com/git-corral/git-corral/policy"
	"text/tabwriter"

	"github.com/go-git/go-git/v5"
	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/session"
	"github.com/git-corral/git-corral/vm"
)

type infoDoc struct {
	Box            string               `json:"box"`
	TopLevel       string               `json:"topLevel"`
	GitDir         string               `json:"gitDir"`
	CommonDir      string               `json:"commonDir"`
	LinkedWorktree bool                 `json:"linkedWorktree"`
	Head           string               `json:"head"`
	ConfigFiles    []project.ConfigFile `json:"configFiles"`
	// Boundary is what crosses between this box and the host, from the effective
	// configuration; nil when the configuration does not load (ConfigError says why).
	Boundary    *boundary `json:"boundary"`
	ConfigError string    `json:"configError,omitempty"`
	// Refused is what a session would refuse this box for (session.Preview, the session's own
	// guards); nil when it would not, or when the configuration does not load.
	Refused *refusal `json:"refused"`
}

// refusal is a session's refusal, as its error and hint say it.
type refusal struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
}

// refusalOf is err as a refusal, nil for nil.
func refusalOf(err error) *refusal {
	if err == nil {
		return nil
	}
	return &refusal{Error: err.Error(), Hint: hint.Of(err)}
}

// boundary lists the known cross-boundary paths of a box (SECURITY.md), live.
type boundary struct {
	Network          string   `json:"network"`
	Mounts           []string `json:"mounts"`
	Ports            []string `json:"ports"`
	ForwardedEnv     []string `json:"forwardedEnv"`
	EnvFromHost      []string `json:"envFromHost"`
	LiteralEnv       []string `json:"literalEnv"`
	EnvFile          string   `json:"envFile,omitempty"`
	GitTokenHosts    []string `json:"gitTokenHosts"`
	Egress           []string `json:"egress"`
	EgressPresets    []string `json:"egressPresets"`
	APIBrokers       []string `json:"apiBrokers"`
	SSHAgent         bool     `json:"sshAgent"`
	NoEnvPassthrough bool     `json:"noEnvPassthrough"`
}

// boundaryOf summarises cfg's cross-boundary paths: names only, never values.
func boundaryOf(top string, cfg *policy.Config) *boundary {
	m := top + " (mounted at the same path"
	if cfg.ReadonlyProject {
		m += ", read-only"
	}
	b := &boundary{Network: string(cfg.Network), Mounts: append([]string{m + ")"}, extraMountLines(cfg)...), Ports: portLines(cfg),
		ForwardedEnv: append([]string{}, cfg.ForwardEnv...), EnvFile: cfg.EnvFile, Egress: append([]string{}, cfg.Egress...),
		APIBrokers: append([]string{}, cfg.APIBrokers...), SSHAgent: cfg.SSHAgent, NoEnvPassthrough: cfg.NoEnvPassthrough,
		EnvFromHost: []string{}, LiteralEnv: []string{}, GitTokenHosts: []string{}, EgressPresets: []string{}}
	if cfg.Network == policy.NetworkBroker { // the presets whose hosts egress holds (policy/presets.go)
		b.EgressPresets = cfg.EgressPresets.Effective()
	}
	if cfg.Source == "clone" { // nothing of the host is mounted; mounts is refused there
		b.Mounts = []string{}
	}
	for g := range cfg.EnvFromHost {
		b.EnvFromHost = append(b.EnvFromHost, g)
	}
	for k := range cfg.Env {
		b.LiteralEnv = append(b.LiteralEnv, k)
	}
	for h := range cfg.GitTokens {
		b.GitTokenHosts = append(b.GitTokenHosts, h)
	}
	sort.Strings(b.EnvFromHost)
	sort.Strings(b.LiteralEnv)
	sort.Strings(b.GitTokenHosts)
	return b
}

func defineInfo(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("info", "info takes no arguments")
		}
		p, err := a.project(ctx)
		if err != nil {
			return err
		}
		doc := infoDoc{Box: p.Box, TopLevel: p.TopLevel, GitDir: p.GitDir, CommonDir: p.CommonDir, LinkedWorktree: p.Linked()}
		if doc.ConfigFiles, err = p.ConfigFiles(ctx); err != nil {
			return err
		}
		doc.Head = headName(p)
		if opts, err := a.loadOptions(ctx, ""); err == nil {
			if eff, err := policy.Load(ctx, opts); err == nil {
				meta, _ := (&vm.Manager{Home: opts.Home}).ReadMeta(p.Box) // an old full box keeps full (session.NetworkFor)
				cfg := session.KeptDefaultNetwork(meta, eff.Config)
				doc.Boundary = boundaryOf(p.TopLevel, cfg)
				doc.Refused = refusalOf(session.Preview(ctx, opts.Home, p, cfg, a.getenv))
			} else {
				doc.ConfigError = err.Error()
			}
		}
		if *jsonOut {
			return a.printJSON(doc)
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "box:\t%s\n", doc.Box)
		fmt.Fprintf(tw, "top level:\t%s\n", visible.String(doc.TopLevel))
		fmt.Fprintf(tw, "git dir:\t%s\n", visible.String(doc.GitDir))
		fmt.Fprintf(tw, "common dir:\t%s\n", visible.String(doc.CommonDir))
		fmt.Fprintf(tw, "linked worktree:\t%v\n", doc.LinkedWorktree)
		fmt.Fprintf(tw, "head:\t%s\n", visible.String(doc.Head))
		tw.Flush()
		if b := doc.Boundary; b != nil {
			fmt.Fprintf(a.stdout, "crosses the boundary (network %s):\n", b.Network)
			for _, m := range b.Mounts {
				fmt.Fprintf(a.stdout, "  mount    %s\n", visible.String(m))
			}
			list := func(what string, v []string) {
				if len(v) > 0 {
					fmt.Fprintf(a.stdout, "  %-8s %s\n", what, visible.String(strings.Join(v, ", ")))
				}
			}
			for _, p := range b.Ports {
				fmt.Fprintf(a.stdout, "  port     %s\n", visible.String(p))
			}
			list("env", append(append(append([]string{}, b.ForwardedEnv...), b.EnvFromHost...), b.LiteralEnv...))
			list("tokens", b.GitTokenHosts)
			list("presets", b.EgressPresets)
			list("egress", b.Egress)
			list("api", b.APIBrokers)
			if b.SSHAgent {
				fmt.Fprintln(a.stdout, "  ssh-agent forwarded")
			}
		} else if doc.ConfigError != "" {
			fmt.Fprintln(a.stdout, "crosses the boundary: unknown, the configuration does not load ('git corral config check')")
		}
		if r := doc.Refused; r != nil {
			fmt.Fprintf(a.stdout, "a session would refuse this box: %s\n", visible.String(r.Error))
			if r.Hint != "" {
				fmt.Fprintf(a.stdout, "  hint: %s\n", visible.String(r.Hint))
			}
		}
		fmt.Fprintln(a.stdout, "git config files:")
		for _, f := range doc.ConfigFiles {
			fmt.Fprintf(a.stdout, "  %-8s %s\n", f.Scope, visible.String(f.Path))
		}
		return nil
	}
}

// headName opens the repository with go-git from what git reported and names HEAD: the branch,
// or the commit when detached, or "" when it cannot be read (an unborn branch, say).
func headName(p *project.Project) string {
	repo, err := git.PlainOpenWithOptions(p.TopLevel, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return ""
	}
	ref, err := repo.Head()
	if err != nil {
		return ""
	}
	if ref.Name().IsBranch() {
		return ref.Name().Short()
	}
	return ref.Hash().String()
}

// extraMountLines describes cfg's mounts entries as the box gets them: the host path as
// written (checked by session.Preview, as a session checks it), the guest path, read-only
// unless :rw.
func extraMountLines(cfg *policy.Config) []string {
	var out []string
	for _, e := range cfg.Mounts {
		m, err := policy.ParseMount(e)
		if err != nil {
			out = append(out, e+" (refused: "+err.Error()+")")
			continue
		}
		mode := "read-only"
		if m.Writable {
			mode = "writable"
		}
		out = append(out, fmt.Sprintf("%s (mounted at %s, %s)", m.Host, m.Guest, mode))
	}
	return out
}

// portLines describes cfg's ports entries: host loopback port to box port.
func portLines(cfg *policy.Config) []string {
	out := []string{}
	for _, e := range cfg.Ports {
		if p, err := policy.ParsePort(e); err == nil {
			out = append(out, fmt.Sprintf("127.0.0.1:%d -> box port %d", p.Host, p.Guest))
		}
	}
	return out
}
