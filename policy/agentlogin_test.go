package policy

import "testing"

// TestAgentLoginValue: agent_login from a trusted file takes a login name or "none"; a name that
// could not be a login file is refused with the key's line. The control values load.
func TestAgentLoginValue(t *testing.T) {
	for _, c := range []struct {
		value string
		ok    bool
	}{{`"work"`, true}, {`"none"`, true}, {`""`, true}, {`"Work"`, false}, {`"../x"`, false}, {`"a b"`, false}} {
		f := newFixture(t)
		f.project("agent_login = " + c.value + "\n")
		if c.ok {
			if eff := f.mustLoad(); `"`+eff.Config.AgentLogin+`"` != c.value {
				t.Errorf("agent_login = %s loaded as %q", c.value, eff.Config.AgentLogin)
			}
			continue
		}
		if list := f.violations(); len(list) != 1 || list[0].Key != "agent_login" || list[0].Line != 1 {
			t.Errorf("agent_login = %s: %v; want one violation at line 1", c.value, list)
		}
	}
}
