package provision

// This file is the contract package vm builds on: what provision hands over for a box, and how
// the guest guard check is called and read. The scripts themselves live in the other files.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/git-corral/git-corral/policy"
)

// Options is what rendering a box's guest side needs.
type Options struct {
	// Network is the box's network mode.
	Network policy.Network
	// User is the guest user name sessions run as.
	User string
	// ProjectDir is the project's path, the same on host and guest.
	ProjectDir string
	// BrokerPort is the broker's port on the host (broker mode).
	BrokerPort int
	// GitShadowScript is the guest script rendered from the gitshadow plan; "" when metadata
	// protection is off.
	GitShadowScript string
	// CoverScript is the hide and box_dirs guest script (cover.Plan.BootScript); "" when
	// neither key lists a path. The guard checks then expect cover.ExpectPath.
	CoverScript string
	// GitCredentialHelper installs boxenv.CredentialHelper, root-owned, and names it in the
	// guest's /etc/gitconfig (git_tokens is set). The tokens themselves are never rendered: they
	// travel in each session's environment.
	GitCredentialHelper bool
	// Packages are Debian packages to install (already allowed by policy).
	Packages []string
	// ForwardPorts are the guest ports of the `ports` entries: the only ports an editor's SSH
	// connection may forward to (sshdconf.go).
	ForwardPorts []int
	// SSHAgent is ssh_agent: an editor's connection may forward an agent too.
	SSHAgent bool
	// Repo are the repository's approved provision scripts, in order, as CheckApproved
	// returns them; their approved bytes are what runs.
	Repo []RepoScript
}

// Mode says who runs a script.
type Mode string

const (
	// ModeSystem scripts run as root.
	ModeSystem Mode = "system"
	// ModeUser scripts run as the box user.
	ModeUser Mode = "user"
)

// Script is one guest provisioning step, in the order it must run at every boot.
type Script struct {
	// Name is the numbered name, e.g. "10-base.sh".
	Name string
	// Mode is who runs it.
	Mode Mode
	// Body is the complete script text.
	Body string
}

// Bundle is everything provision renders for one box.
type Bundle struct {
	Scripts []Script
}

// GuardCheckArgv is the session check as a command of its own, run over SSH as the box user
// before a session on a box without the guard daemon (GuardSocketPath), when the in-band way
// does not apply. It prints a JSON GuardReport and exits 0 only when every guard holds. It
// needs no sudo: it checks the boot's root-made attestation of root-only state and, live,
// everything the box user could change (see session-check.bash).
func GuardCheckArgv() []string {
	return []string{"/usr/local/libexec/corral/guard-check", "session"}
}

// GuardReport is the guard check's answer.
type GuardReport struct {
	// OK is true only when every guard for the box's mode holds.
	OK bool `json:"ok"`
	// Mode is the network mode the guest believes it has.
	Mode string `json:"mode"`
	// Failures name each guard that does not hold, e.g. "nftables ruleset differs".
	Failures []string `json:"failures"`
}

// ParseGuardReport reads the guard check's output.
func ParseGuardReport(out []byte) (GuardReport, error) {
	var r GuardReport
	if err := json.Unmarshal(out, &r); err != nil {
		return GuardReport{}, fmt.Errorf("read guard check output %q: %w", truncate(out, 200), err)
	}
	if r.OK && len(r.Failures) > 0 {
		r.OK = false
	}
	return r, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// InbandMarker starts the line the session check writes on stderr when sourced in-band,
// followed by its JSON report (ParseGuardReport).
const InbandMarker = "\x1ecorral-guard-check "

// InbandNoCheckExit is the exit status of an in-band session whose box has no session check
// to source (a box rendered before it existed): nothing else ran, and the caller falls back to
// the separate guard check.
const InbandNoCheckExit = 97

// InbandGuardPrefix is the shell command `git corral run` puts before its command in the same
// session, joined with &&: the box user's login shell (bash) sources the session check, which
// writes InbandMarker and its report on stderr and fails unless every guard holds, so the
// command runs only in a box that passed. Without a session check it exits InbandNoCheckExit.
func InbandGuardPrefix() string {
	return fmt.Sprintf("[ -r %s ] || exit %d; . %s inband", SessionCheckPath, InbandNoCheckExit, SessionCheckPath)
}

// ProductScripts names each of the bundle's own guest scripts (not the git shadow's, not the
// repository's) with a short hash of its mode and body. A box records them at creation; a
// configuration that renders others later (git_tokens or packages added, another git corral)
// does not reach that box until it is made again, which the caller says (ScriptsDrift).
func (b Bundle) ProductScripts() map[string]string {
	m := map[string]string{}
	for _, s := range b.Scripts {
		if s.Name == GitShadowScriptName || strings.HasPrefix(s.Name, RepoScriptPrefix) {
			continue
		}
		m[s.Name] = sha256Hex(string(s.Mode) + "\x00" + s.Body)[:16]
	}
	return m
}

// ScriptsDrift lists how the product scripts now differ from those a box recorded: "+NAME" for
// one the box lacks, "-NAME" for one it has and the configuration no longer renders, "~NAME"
// for one whose body changed; sorted by name. Nil recorded (a box made before they were
// recorded) has no drift to tell.
func ScriptsDrift(recorded, now map[string]string) []string {
	if recorded == nil {
		return nil
	}
	var d []string
	for n, h := range now {
		switch r, ok := recorded[n]; {
		case !ok:
			d = append(d, "+"+n)
		case r != h:
			d = append(d, "~"+n)
		}
	}
	for n := range recorded {
		if _, ok := now[n]; !ok {
			d = append(d, "-"+n)
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i][1:] < d[j][1:] })
	return d
}
