package front

// Narrowing rules: the repository's .corral.toml [sandbox] table may only narrow the manifest
// (policy decides: Effective.NarrowSandbox), loaded as every git corral command loads the
// configuration; outside a repository, and where no .git or .corral.toml could make one, the
// manifest is used as it is, and no git process runs.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/sandbox"
)

// narrow narrows m by this repository's .corral.toml [sandbox] table.
func narrow(ctx context.Context, e Env, m *sandbox.Manifest, homeDir string) (*sandbox.Manifest, error) {
	if dir, err := WorkDir(e.Dir); err == nil && !mayBeCheckout(e.Getenv, dir) {
		return m, nil
	}
	opts, err := loadOptions(ctx, e)
	if errors.Is(err, project.ErrNotRepository) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return nil, hint.With(err, "nothing ran; fix the configuration ('git corral config check' lists every problem)")
	}
	n, err := NarrowManifest(m, eff, homeDir)
	if err != nil {
		return nil, hint.With(err, "nothing ran; the repository's [sandbox] may only narrow the manifest: widen the manifest (--manifest FILE) or narrow the table")
	}
	return n, nil
}

// loadOptions are the configuration's load options as git corral's commands build them
// (cmd/git-corral, loadOptions), for the repository the command runs in. The agent catalogue's
// API hosts (LoadOptions.AgentHosts) are left out: they only join a broker-mode box's egress,
// which the [sandbox] table never reads, and they live in package session, which the front
// does not link.
func loadOptions(ctx context.Context, e Env) (policy.LoadOptions, error) {
	h, err := home.Resolve(e.Getenv)
	if err != nil {
		return policy.LoadOptions{}, err
	}
	dir, err := WorkDir(e.Dir)
	if err != nil {
		return policy.LoadOptions{}, err
	}
	p, err := project.Find(ctx, dir)
	if err != nil {
		return policy.LoadOptions{}, err
	}
	return policy.LoadOptions{Home: h, TopLevel: p.TopLevel, Box: p.Box}, nil
}

// NarrowManifest returns m narrowed by the repository's [sandbox] table in eff; m itself when
// the table sets nothing.
func NarrowManifest(m *sandbox.Manifest, eff *policy.Effective, home string) (*sandbox.Manifest, error) {
	if m == nil {
		m = &sandbox.Manifest{}
	}
	file := eff.SandboxFile()
	if file == "" {
		return m, nil
	}
	// The defaults are what the repository narrows when the manifest leaves a limit unset.
	l := m.Limits.WithDefaults()
	g, err := eff.NarrowSandbox(policy.SandboxGrant{Read: m.Read, Write: m.Write, Exec: m.Exec, Network: m.Network, Env: m.Env,
		Timeout: l.Timeout, CPU: l.CPU, Memory: l.Memory, Output: l.Output, Scratch: l.Scratch, Pids: l.Pids}, home)
	if err != nil {
		return nil, fmt.Errorf("narrow the sandbox manifest by %s: %w", file, err)
	}
	// A limit still at its default stays unset: logged as the default, and a run that needs no
	// init step keeps going without it.
	lim := sandbox.Limits{Timeout: g.Timeout, CPU: g.CPU, Memory: g.Memory, Output: g.Output, Scratch: g.Scratch, Pids: g.Pids}
	return &sandbox.Manifest{Source: m.Source, Digest: m.Digest, NarrowedBy: file,
		Read: g.Read, Write: g.Write, Exec: g.Exec, Network: g.Network, Env: g.Env,
		Limits: lim.Unset(m.Limits)}, nil
}

// mayBeCheckout reports whether dir may lie in a checkout, so that git's own lookup (two git
// processes, a third of the light tier's start-up) runs only then: git finds a work tree only
// through a .git in dir or above it, or through its location variables; and with no
// .corral.toml there either, there is no [sandbox] table that could narrow the run.
func mayBeCheckout(getenv func(string) string, dir string) bool {
	for _, v := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR"} {
		if getenv(v) != "" {
			return true
		}
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		for _, name := range []string{".git", policy.RepoFile} {
			if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
				return true
			}
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}
