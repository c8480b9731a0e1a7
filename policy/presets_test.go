package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/broker"
)

// presetHostsOf returns the hosts of the named presets, in table order.
func presetHostsOf(names ...string) []string {
	var out []string
	for _, n := range names {
		p, _ := LookupPreset(n)
		out = append(out, p.Hosts...)
	}
	return out
}

// TestPresetTable: every preset has a name, a reason, a source and hosts the broker parses, each
// with its port; every default names a preset.
func TestPresetTable(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Presets() {
		if p.Name == "" || seen[p.Name] || len(p.Why) < 20 || len(p.Source) < 20 || len(p.Hosts) == 0 {
			t.Errorf("preset %+v: needs a unique name, a why, a source and hosts", p)
		}
		seen[p.Name] = true
		if _, err := broker.ParseAllowList(p.Hosts); err != nil {
			t.Errorf("preset %s: the broker refuses its hosts: %v", p.Name, err)
		}
		for _, h := range p.Hosts {
			if checkEgress(h) != "" || !strings.Contains(h, ":") {
				t.Errorf("preset %s: host %q is not an egress entry with its port", p.Name, h)
			}
		}
	}
	for _, n := range DefaultPresets {
		if !seen[n] {
			t.Errorf("default preset %q is not in the table", n)
		}
	}
}

// TestEgressPresets: with nothing set, a broker-mode box's allow-list is every default preset's
// hosts, each with the origin "preset NAME", beside egress; a trusted layer's egress_presets
// replaces the default and later trusted layers add; the repository's list only narrows (a name
// the trusted layers dropped adds nothing); full mode adds no host.
func TestEgressPresets(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		f := newFixture(t)
		f.project("egress = [\"example.org\"]\n")
		eff := f.mustLoad()
		c := eff.Config
		want := append([]string{"example.org"}, presetHostsOf(DefaultPresets...)...)
		if c.Network != NetworkBroker || !slices.Equal(c.Egress, want) {
			t.Fatalf("network %s, egress %v; want broker and %v", c.Network, c.Egress, want)
		}
		if o := eff.Origins["egress[0]"]; o.Layer != LayerHostProject {
			t.Errorf("egress's own entry: origin %v", o)
		}
		if o := eff.Origins["egress[1]"].String(); o != "preset npm" {
			t.Errorf("registry.npmjs.org:443: origin %q, want preset npm", o)
		}
		i := slices.Index(c.Egress, "pypi.org:443")
		if o := eff.Origins[egressKey(i)].String(); o != "preset pypi" {
			t.Errorf("pypi.org:443: origin %q, want preset pypi", o)
		}
	})
	t.Run("trusted layers replace the default, then add", func(t *testing.T) {
		f := newFixture(t)
		f.global("egress_presets = [\"npm\"]\n")
		f.project("egress_presets = [\"pypi\"]\n")
		eff := f.mustLoad()
		if want := presetHostsOf("npm", "pypi"); !slices.Equal(eff.Config.Egress, want) {
			t.Errorf("egress %v, want %v", eff.Config.Egress, want)
		}
		f.global("egress_presets = []\n")
		f.project("")
		if e := f.mustLoad().Config.Egress; len(e) != 0 {
			t.Errorf("egress_presets = [] left %v", e)
		}
	})
	t.Run("the repository narrows, never adds", func(t *testing.T) {
		f := newFixture(t)
		f.project("egress_presets = [\"npm\", \"github\"]\n")
		f.repo("egress_presets = [\"github\", \"pypi\"]\n")
		eff := f.mustLoad()
		if want := presetHostsOf("github"); !slices.Equal(eff.Config.Egress, want) {
			t.Errorf("egress %v, want only github's %v", eff.Config.Egress, want)
		}
		if got := eff.Config.EgressPresets.Effective(); !slices.Equal(got, []string{"github"}) {
			t.Errorf("effective presets %v", got)
		}
		var shown []string
		for _, s := range eff.Settings() {
			if strings.HasPrefix(s.Key, "egress_presets") {
				shown = append(shown, s.Key+"="+strings.Join(s.Value.([]string), ",")+" "+strings.Join(s.Origins, ","))
			}
		}
		if len(shown) != 2 || !strings.Contains(shown[1], "egress_presets.repository=github,pypi") {
			t.Errorf("config shows %q", shown)
		}
	})
	t.Run("full and offline add no host", func(t *testing.T) {
		for _, mode := range []string{"full", "offline"} {
			f := newFixture(t)
			f.project("network = \"" + mode + "\"\n")
			if e := f.mustLoad().Config.Egress; len(e) != 0 {
				t.Errorf("%s: egress %v", mode, e)
			}
		}
	})
}

// TestEgressPresetsUnknown: an unknown preset name fails the load in every layer, naming the
// file, line, key and value and listing the known names; the control (a known name in the same
// place) loads.
func TestEgressPresetsUnknown(t *testing.T) {
	for _, layer := range []string{"global", "repo", "project"} {
		f := newFixture(t)
		write := map[string]func(string) string{"global": f.global, "repo": f.repo, "project": f.project}[layer]
		file := write("cpus = 1\negress_presets = [\"npm\", \"nmp\"]\n")
		list := f.violations()
		if len(list) != 1 {
			t.Fatalf("%s: violations %v", layer, list)
		}
		v := list[0]
		if v.File != file || v.Line != 2 || v.Key != "egress_presets" || !strings.Contains(v.Problem, `"nmp"`) ||
			!strings.Contains(v.Problem, "npm, pypi, go, crates, github, debian, anthropic, openai, gemini") {
			t.Errorf("%s: %+v", layer, v)
		}
		write("cpus = 1\negress_presets = [\"npm\"]\n")
		f.mustLoad()
	}
}

// TestNetworkDefault: a new configuration says broker, with the origin "default", and marks it
// as defaulted; any layer naming a mode, a flag or a profile's floor does not.
func TestNetworkDefault(t *testing.T) {
	f := newFixture(t)
	eff := f.mustLoad()
	if c := eff.Config; c.Network != NetworkBroker || !c.NetworkDefaulted || eff.Origins["network"].String() != "default" {
		t.Errorf("default: network %s (%v), defaulted %v", c.Network, eff.Origins["network"], c.NetworkDefaulted)
	}
	for name, set := range map[string]func(){
		"global":  func() { f.global("network = \"broker\"\n") },
		"repo":    func() { f.repo("network = \"broker\"\n") },
		"project": func() { f.project("network = \"full\"\n") },
		"profile": func() { f.project("profile = \"strict\"\n") },
	} {
		f = newFixture(t)
		set()
		if c := f.mustLoad().Config; c.NetworkDefaulted {
			t.Errorf("%s names a mode, yet network %s counts as defaulted", name, c.Network)
		}
	}
	f = newFixture(t)
	if c := f.mustLoad(Flag{Key: "network", Value: "full"}).Config; c.NetworkDefaulted || c.Network != NetworkFull {
		t.Errorf("--network full: %s, defaulted %v", c.Network, c.NetworkDefaulted)
	}
}

func egressKey(i int) string { return "egress[" + fmtAny(i) + "]" }
