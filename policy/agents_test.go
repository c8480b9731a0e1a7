package policy

import (
	"strings"
	"testing"
	"time"
)

// TestAgentKeys: agent_min_age and agent_versions are trusted-only — the repository naming
// them is a violation — and a trusted file sets them (the control); a pin must name a
// catalogue agent and an exact version.
func TestAgentKeys(t *testing.T) {
	f := newFixture(t)
	f.global("agent_min_age = \"24h\"\nagent_versions = { codex = \"0.160.0\" }\n")
	c := f.mustLoad().Config
	if c.AgentMinAge != 24*time.Hour || c.AgentVersions["codex"] != "0.160.0" {
		t.Errorf("trusted layer: min age %v, versions %v", c.AgentMinAge, c.AgentVersions)
	}
	if d := Default().AgentMinAge; d != 7*24*time.Hour {
		t.Errorf("default agent_min_age = %v, want 168h", d)
	}

	f.repo("agent_min_age = \"0s\"\nagent_versions = { claude = \"9.9.9\" }\n")
	vs := f.violations()
	for _, key := range []string{"agent_min_age", "agent_versions"} {
		if !hasViolation(vs, key) {
			t.Errorf("repository set %s without a violation: %+v", key, vs)
		}
	}

	for _, bad := range []string{`{ codex = "latest" }`, `{ codex = "^1.0.0" }`, `{ cursor = "1.0.0" }`, `{ codex = "1.0.0\n" }`} {
		g := newFixture(t)
		g.global("agent_versions = " + bad + "\n")
		if vs := g.violations(); !hasViolation(vs, "agent_versions") {
			t.Errorf("agent_versions = %s accepted", bad)
		}
	}
}

func hasViolation(vs []Violation, key string) bool {
	for _, v := range vs {
		if strings.HasPrefix(v.Key, key) {
			return true
		}
	}
	return false
}
