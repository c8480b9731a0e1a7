package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/login"
)

// agentsHostLogin runs the verbs of host-held logins: login (a token on stdin, or --import of a
// credentials file), logins (the list, never a token) and logout --host. A token is never taken
// from the command line, where other local users could read it.
func (a *app) agentsHostLogin(verb string, agent agents.Agent, as, importFile string, jsonOut bool) error {
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return err
	}
	name := as
	if name == "" {
		name = agent.Name
	}
	switch verb {
	case "logins":
		return a.printLogins(h, jsonOut)
	case "logout":
		removed, err := login.Remove(h.Dir, name)
		if err != nil {
			return err
		}
		if jsonOut {
			return a.printJSON(map[string]any{"login": name, "removed": removed})
		}
		if !removed {
			fmt.Fprintf(a.stdout, "there is no host-held login %q (%s)\n", name, login.Path(h.Dir, name))
			return nil
		}
		fmt.Fprintf(a.stdout, "forgot the host-held login %q; its boxes get no login from their next session on\n", name)
		return nil
	}
	if agent.Name != "claude" {
		return withHint(fmt.Errorf("%s cannot use a login held on the host", agent.Name),
			"see docs/AGENT-LOGINS.md for why; give its boxes an API key route (api_brokers) instead")
	}
	if err := login.CheckName(name); err != nil {
		return usageErrorf("agents", "--as: %v", err)
	}
	rec, err := a.readLogin(importFile)
	if err != nil {
		return withHint(err, "paste the token of 'claude setup-token' on stdin, or name Claude Code's credentials file with --import ~/.claude/.credentials.json")
	}
	if err := login.Save(h.Dir, name, rec); err != nil {
		return err
	}
	if jsonOut {
		return a.printJSON(map[string]any{"login": name, "agent": rec.Agent, "kind": rec.Kind, "file": login.Path(h.Dir, name)})
	}
	fmt.Fprintf(a.stdout, "stored the host-held %s login %q (%s) in %s; broker-mode boxes use it from their next session on\n",
		rec.Agent, name, rec.Kind, login.Path(h.Dir, name))
	if rec.Kind == login.KindOAuth {
		fmt.Fprintln(a.stderr, "corral: hint: the login's refresh token now belongs to git corral: log the host's own claude out ('claude /logout') or it will spend the same refresh token")
	}
	return nil
}

// readLogin reads the login to store: Claude Code's credentials file, or a token on stdin
// (asked for without echo on a terminal).
func (a *app) readLogin(importFile string) (login.Record, error) {
	if importFile != "" {
		data, err := readPrivate("credentials", importFile)
		if err != nil {
			return login.Record{}, err
		}
		return login.ImportClaude(data)
	}
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(a.stderr, "paste the token of 'claude setup-token' (not shown): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return login.Record{}, fmt.Errorf("read the token: %w", err)
		}
		return login.ClaudeToken(string(b))
	}
	b, err := io.ReadAll(io.LimitReader(a.stdin, 64<<10))
	if err != nil {
		return login.Record{}, fmt.Errorf("read the token from stdin: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return login.Record{}, errors.New("no token on stdin")
	}
	return login.ClaudeToken(string(b))
}

// printLogins lists the host-held logins: name, agent, kind, expiry; never a token.
func (a *app) printLogins(h home.Home, jsonOut bool) error {
	list, err := login.List(h.Dir)
	if err != nil {
		return err
	}
	if jsonOut {
		return a.printJSON(list)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOGIN\tAGENT\tKIND\tEXPIRES\tPROBLEM")
	for _, e := range list {
		exp := "-"
		if !e.ExpiresAt.IsZero() {
			exp = e.ExpiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, dash(e.Agent), dash(e.Kind), exp, dash(e.Problem))
	}
	return tw.Flush()
}
