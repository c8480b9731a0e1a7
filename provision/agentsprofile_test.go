package provision

import (
	"strings"
	"testing"
)

// loginPath prints what a login shell of the box user finds: its PATH and where "fakeagent"
// resolves. The session starts from a bare PATH, as sshd gives one, and /etc/profile resets it.
const loginPath = `runuser -u corral -- env -i HOME=/home/corral PATH=/usr/bin:/bin /bin/bash -l -c 'echo "PATH=$PATH"; echo "AGENT=$(command -v fakeagent || echo none)"'
`

// storeMounted stands in for the agent store's mount: a launcher in the store's bin.
const storeMounted = `mkdir -p ` + AgentBinGuest + `
printf '#!/bin/sh\necho agent\n' >` + AgentBinGuest + `/fakeagent
chmod 0755 ` + AgentBinGuest + `/fakeagent
`

// TestAgentsProfileLoginShell runs the real 10-base script and then a login shell of the box
// user (git corral shell): with the store mounted its launchers are on PATH once, even after
// a second boot; without the store PATH is left alone; and without the script (the control)
// a login shell does not find them although the store is there.
func TestAgentsProfileLoginShell(t *testing.T) {
	needRoot(t)
	g := newGuestRoot(t, privdropOptions())
	cases := []struct {
		name, prep, wantPath, wantAgent string
		absent                          bool
	}{
		{"store mounted", "sh /corral/10-base.sh >/dev/null || exit 90\n" + storeMounted,
			"PATH=" + AgentBinGuest + ":", "AGENT=" + AgentBinGuest + "/fakeagent", false},
		{"two boots", "sh /corral/10-base.sh >/dev/null && sh /corral/10-base.sh >/dev/null || exit 90\n" + storeMounted,
			"PATH=" + AgentBinGuest + ":", "AGENT=" + AgentBinGuest + "/fakeagent", false},
		{"no store", "sh /corral/10-base.sh >/dev/null || exit 90\n", "", "AGENT=none", true},
		{"control: no profile script", storeMounted, "", "AGENT=none", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := g.run("", prepHostile+c.prep+`
stat -c 'PROFILE=%U:%G %a' /etc/profile.d/corral-agents.sh 2>/dev/null
`+loginPath)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if !strings.Contains(out, c.wantAgent+"\n") {
				t.Errorf("login shell: want %q\n%s\n%s", c.wantAgent, out, errOut)
			}
			if c.wantPath != "" && !strings.Contains(out, c.wantPath) {
				t.Errorf("login shell PATH: want prefix %q\n%s", c.wantPath, out)
			}
			if n := strings.Count(out, AgentBinGuest+":"); !c.absent && n != 1 || c.absent && n != 0 {
				t.Errorf("%s is on PATH %d times\n%s", AgentBinGuest, n, out)
			}
			if hasProfile := strings.Contains(out, "PROFILE=root:root 644"); hasProfile == (c.name == "control: no profile script") {
				t.Errorf("profile script root-owned 0644: %v\n%s", hasProfile, out)
			}
		})
	}
}

// TestAgentsProfileRendered: the script 10-base installs names the store's bin and nothing
// from options (no value of the box reaches it).
func TestAgentsProfileRendered(t *testing.T) {
	b, err := Render(privdropOptions())
	if err != nil {
		t.Fatal(err)
	}
	base := b.Scripts[1] // after 05-box
	if base.Name != "10-base.sh" || !strings.Contains(base.Body, "/etc/profile.d/corral-agents.sh") ||
		!strings.Contains(base.Body, "PATH="+AgentBinGuest+":$PATH") {
		t.Errorf("10-base does not install the agents' profile script:\n%s", base.Body)
	}
}
