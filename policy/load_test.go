package policy

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
)

// TestLayers: scalars override in layer order, arrays take the union, tables merge by key, and
// every value's origin names the file and line, flag, profile or default that set it.
func TestLayers(t *testing.T) {
	f := newFixture(t)
	g := f.global("cpus = 1\npackages = [\"git\"]\negress = [\"github.com\"]\negress_presets = []\n[env]\nA = \"global\"\n")
	r := f.repo("# repository\ncpus = 3\npackages = [\"curl\", \"git\"]\nenv.B = \"repo\"\n")
	p := f.project("network = \"broker\"\negress = [\"pypi.org\"]\ncpus = 2\n[env]\nB = \"project\"\n")
	eff := f.mustLoad(Flag{Key: "packages", Value: "jq"}, Flag{Key: "memory", Value: "1GiB"})
	c := eff.Config
	if c.CPUs != 2 || c.Network != NetworkBroker || c.Memory != "1GiB" || c.Disk != "10GiB" {
		t.Errorf("scalars: %+v", c)
	}
	if want := []string{"git", "curl", "jq"}; !reflect.DeepEqual(c.Packages, want) {
		t.Errorf("packages = %v, want %v", c.Packages, want)
	}
	if want := []string{"github.com", "pypi.org"}; !reflect.DeepEqual(c.Egress, want) {
		t.Errorf("egress = %v, want %v", c.Egress, want)
	}
	if want := map[string]string{"A": "global", "B": "project"}; !reflect.DeepEqual(c.Env, want) {
		t.Errorf("env = %v, want %v", c.Env, want)
	}
	want := map[string]string{
		"cpus":        p + ":3",
		"network":     p + ":1",
		"memory":      "flag --memory",
		"disk":        "default",
		"packages[0]": g + ":2",
		"packages[1]": r + ":3",
		"packages[2]": "flag --packages",
		"env.A":       g + ":6",
		"env.B":       p + ":5",
	}
	for k, w := range want {
		if got := eff.Origins[k].String(); got != w {
			t.Errorf("origin of %s = %q, want %q", k, got, w)
		}
	}
}

// TestProfileFloor: the effective profile raises values below its floor (origin: the profile)
// and leaves stricter ones alone; a trusted layer may lower the profile again.
func TestProfileFloor(t *testing.T) {
	f := newFixture(t)
	f.repo("profile = \"locked\"\nsource = \"clone\"\n")
	eff := f.mustLoad()
	c := eff.Config
	if c.Network != NetworkOffline || !c.ReadonlyProject || c.AgentState != "isolated" || !c.NoEnvPassthrough || c.GitIdentity != "corral" {
		t.Errorf("locked floor not applied: %+v", c)
	}
	if o := eff.Origins["network"].String(); o != "profile locked" {
		t.Errorf("origin of network = %q", o)
	}
	f.project("profile = \"standard\"\nnetwork = \"full\"\n")
	if c := f.mustLoad().Config; c.Network != NetworkFull {
		t.Errorf("the per-project file could not lower the profile: %+v", c)
	}
	f.project("profile = \"strict\"\nnetwork = \"full\"\n")
	if c := f.mustLoad().Config; c.Network != NetworkBroker {
		t.Errorf("strict did not raise network to broker: %v", c.Network)
	}
}

// TestEveryViolationAtOnce: violations from several layers and flags are all reported, in file
// and line order, each with its file:line.
func TestEveryViolationAtOnce(t *testing.T) {
	f := newFixture(t)
	g := f.global("netwrok = \"full\"\n")
	r := f.repo("egress = [\"evil.example\"]\ncpus = 64\nNETWORK = \"full\"\nssh_agent = true\n")
	p := f.project("cpus = \"many\"\n")
	_, err := f.load(Flag{Key: "network", Value: "open"})
	var vs *Violations
	if !errors.As(err, &vs) {
		t.Fatalf("want *Violations, got %v", err)
	}
	list := vs.List
	var got []string
	for _, v := range list {
		got = append(got, v.File+":"+itoa(v.Line)+":"+v.Key)
	}
	want := []string{g + ":1:netwrok", r + ":1:egress", r + ":2:cpus", r + ":3:NETWORK", r + ":4:ssh_agent", p + ":1:cpus", "flag --network:0:network"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("violations\n%v\nwant\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := strings.Count(err.Error(), "\n"); n != len(want) {
		t.Errorf("error has %d lines after the summary, want %d:\n%v", n, len(want), err)
	}
}

// TestEgressShapes: allow-list entries of each documented shape are accepted from a trusted
// file, and malformed ones are refused.
func TestEgressShapes(t *testing.T) {
	good := []string{"github.com", "*.pypi.org", "api.example.com:443", "10.1.2.3", "10.0.0.0/8", "10.1.2.3:8080", "::1", "fd00::/8", "[::1]:443"}
	bad := []string{"", "*", "*.com.", "localhost", "Evil.COM", "a..b", "host:0", "host:99999", "host:", "10.0.0.0/33", "http://x.com", "x.com/path", "-a.com", "a b.com", "*.*.com", "x.com:08"}
	for _, e := range good {
		if p := checkEgress(e); p != "" {
			t.Errorf("egress %q refused: %s", e, p)
		}
	}
	for _, e := range bad {
		if checkEgress(e) == "" {
			t.Errorf("egress %q accepted", e)
		}
	}
}

// TestLoadNeedsAbsolutePaths: a zero Home would make the current directory's config.toml the
// trusted global file, so Load refuses it rather than guess.
func TestLoadNeedsAbsolutePaths(t *testing.T) {
	for _, o := range []LoadOptions{{}, {Home: home.Home{Dir: "rel"}}, {Home: home.Home{Dir: "/abs"}, TopLevel: "repo"}} {
		if _, err := Load(t.Context(), o); err == nil || !strings.Contains(err.Error(), "must be absolute") {
			t.Errorf("Load(%+v) = %v, want an error", o, err)
		}
	}
}

// TestGitTokenHosts: git_tokens keys are host names with a dot, or localhost (a git server on
// the host's loopback, through the broker), with an optional port; nothing else.
func TestGitTokenHosts(t *testing.T) {
	good := []string{"github.com", "git.example.com:8443", "a.b.c:1", "localhost", "localhost:8443"}
	bad := []string{"", "gitserver", "gitserver:8443", "Localhost", "localhost.", "localhost:", "localhost:0", "*.localhost", "localhost/x", "github.com:", "github.com:0", "github.com:99999", "github.com:08", "*.github.com",
		"GitHub.com", "https://github.com", "github.com/org", "git hub.com", "github.com:443:1", "github.com\n"}
	for _, h := range good {
		if p := checkGitHost(h); p != "" {
			t.Errorf("git_tokens host %q refused: %s", h, p)
		}
	}
	for _, h := range bad {
		if checkGitHost(h) == "" {
			t.Errorf("git_tokens host %q accepted", h)
		}
	}
}
