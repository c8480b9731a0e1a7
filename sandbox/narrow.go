package sandbox

// Narrowing rules: the repository's .corral.toml [sandbox] table only narrows the manifest the
// user gave (policy decides, and refuses a wider entry naming its file and line); the result
// is a new manifest, the user's is left as it was, and the run's log line names the file that
// narrowed it.

import (
	"fmt"

	"github.com/git-corral/git-corral/policy"
)

// Narrow returns m narrowed by the repository's [sandbox] table in eff; home expands "~/" in
// the table. It returns m itself when the table sets nothing, and a *policy.Violations when an
// entry would grant more than m.
func Narrow(m *Manifest, eff *policy.Effective, home string) (*Manifest, error) {
	if m == nil {
		m = &Manifest{}
	}
	file := eff.SandboxFile()
	if file == "" {
		return m, nil
	}
	scratch := m.Limits.Scratch
	if scratch == 0 {
		scratch = DefaultScratch
	}
	g, err := eff.NarrowSandbox(policy.SandboxGrant{
		Read: m.Read, Write: m.Write, Exec: m.Exec, Network: m.Network, Env: m.Env,
		Timeout: m.Limits.Timeout, CPU: m.Limits.CPU, Memory: m.Limits.Memory, Output: m.Limits.Output,
		Scratch: scratch, Pids: m.Limits.Pids,
	}, home)
	if err != nil {
		return nil, fmt.Errorf("narrow the sandbox manifest by %s: %w", file, err)
	}
	return &Manifest{
		Source: m.Source, Digest: m.Digest, NarrowedBy: file,
		Read: g.Read, Write: g.Write, Exec: g.Exec, Network: g.Network, Env: g.Env,
		Limits: Limits{Timeout: g.Timeout, CPU: g.CPU, Memory: g.Memory, Output: g.Output, Scratch: g.Scratch, Pids: g.Pids},
	}, nil
}
