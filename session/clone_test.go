package session

import (
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// TestCloneBundle: a clone-mode box gets the guest scripts of its network mode (lockdown,
// privilege drop, the guard check they install), with nothing about a project mount: no git
// shadow, no repository script, no project directory.
func TestCloneBundle(t *testing.T) {
	for _, n := range []policy.Network{policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline} {
		t.Run(string(n), func(t *testing.T) {
			cfg := policy.Default()
			cfg.Network, cfg.Packages, cfg.Provision = n, []string{"jq"}, []string{"setup.sh"}
			b, err := cloneBundle(cfg, 41234)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			all := ""
			for _, s := range b.Scripts {
				names = append(names, s.Name)
				all += s.Body
			}
			if got := strings.Join(names, " "); got != "05-box.sh 10-base.sh 20-lockdown.sh 25-packages.sh 30-privdrop.sh" {
				t.Errorf("scripts %q, want base, lockdown, packages and privdrop only", got)
			}
			if !strings.Contains(all, provision.GuardCheckPath) {
				t.Errorf("no script installs the guard check %s", provision.GuardCheckPath)
			}
			if !strings.Contains(all, "printf '%s\\n' '' | install_file /etc/corral/project-dir") {
				t.Error("the scripts name a project directory; a clone-mode box has none")
			}
			if n == policy.NetworkBroker && !strings.Contains(all, "41234") {
				t.Error("the broker port is not in the broker-mode scripts")
			}
		})
	}
}

// TestNetworkFor: the one network-change rule of every source. An existing box keeps its mode;
// a stricter one than asked is kept (fetch passes the defaults), a looser one than the
// configuration asks for is refused, and a broker box keeps its recorded port.
func TestNetworkFor(t *testing.T) {
	m := &vm.Manager{Home: home.Home{Dir: t.TempDir()}}
	for _, tc := range []struct {
		name       string
		meta, want policy.Network
		port       int
		ask        policy.Network
		refused    bool
	}{
		{"new box takes the configuration", "", policy.NetworkBroker, 0, policy.NetworkBroker, false},
		{"fetch adopts broker", policy.NetworkBroker, policy.NetworkBroker, 40001, policy.NetworkFull, false},
		{"broker asked of an offline box stays offline", policy.NetworkOffline, policy.NetworkOffline, 0, policy.NetworkBroker, false},
		{"broker asked of a full box is refused", policy.NetworkFull, "", 0, policy.NetworkBroker, true},
		{"the broker default keeps an old full box full", policy.NetworkFull, policy.NetworkFull, 0, "default", false},
		{"the broker default makes a new box broker", "", policy.NetworkBroker, 0, "default", false},
		{"offline asked of a broker box is refused", policy.NetworkBroker, "", 40001, policy.NetworkOffline, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			box := "b-" + strings.ReplaceAll(tc.name, " ", "-")
			if tc.meta != "" {
				if err := m.WriteMeta(vm.Meta{Box: box, Network: string(tc.meta), BrokerPort: tc.port, NoProjectMount: true}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := policy.Default()
			cfg.Network, cfg.NetworkDefaulted = tc.ask, false // as Load leaves it when a layer names a mode
			if tc.ask == "default" {
				// as Load leaves it when nothing names a mode
				cfg.Network, cfg.NetworkDefaulted = policy.Default().Network, true
			}
			meta, _ := m.ReadMeta(box)
			var notices []string
			req := Request{Cmd: "start", UI: UI{Notice: func(s string) { notices = append(notices, s) }}}
			got, err := NetworkFor(req, box, meta, cfg)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "was created with network") {
					t.Fatalf("NetworkFor = %v, want a refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Network != tc.want {
				t.Errorf("network %s, want %s", got.Network, tc.want)
			}
			if kept := tc.meta != "" && tc.meta != cfg.Network; kept != (len(notices) == 1) {
				t.Errorf("notices %q: want one exactly when the box keeps another mode", notices)
			}
			if tc.ask == "default" && tc.meta == policy.NetworkFull && (len(notices) != 1 || !strings.Contains(notices[0], `network = "full"`) ||
				!strings.Contains(notices[0], `network = "broker"`) || !strings.Contains(notices[0], "projects/"+box+".toml")) {
				t.Errorf("notice %q: want how to keep full and how to switch, naming the box's project file", notices)
			}
			port, err := brokerPort(got, meta)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == policy.NetworkBroker && (port == 0 || (tc.port != 0 && port != tc.port)) {
				t.Errorf("broker port %d, want the recorded %d or a new one", port, tc.port)
			}
			if tc.want != policy.NetworkBroker && port != 0 {
				t.Errorf("broker port %d outside broker mode", port)
			}
		})
	}
}

// TestFetchKeepsAnOldFullBox: fetch loads no configuration and passes the defaults, which
// name no mode: an old full clone box keeps full, quietly (CI's e2e TestCloneBox: fetch was
// refused, "created with network full, the configuration now says broker"); the control, the
// same defaults with a mode named, is refused.
func TestFetchKeepsAnOldFullBox(t *testing.T) {
	meta := vm.Meta{Box: "dest-abc123", Network: string(policy.NetworkFull), NoProjectMount: true}
	var notices []string
	req := Request{Cmd: "fetch", UI: UI{Notice: func(s string) { notices = append(notices, s) }}}
	got, err := NetworkFor(req, meta.Box, meta, policy.Default())
	if err != nil || got.Network != policy.NetworkFull || len(notices) != 0 {
		t.Fatalf("fetch with the defaults: %v, network %v, notices %q; want full, quietly", err, got, notices)
	}
	named := policy.Default()
	named.NetworkDefaulted = false
	if _, err := NetworkFor(req, meta.Box, meta, named); err == nil || !strings.Contains(err.Error(), "was created with network") {
		t.Fatalf("control, broker named: %v, want the refusal", err)
	}
}
