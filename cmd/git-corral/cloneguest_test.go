package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/sandboxguest"
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
			if got := strings.Join(names, " "); got != "10-base.sh 20-lockdown.sh 25-packages.sh 30-privdrop.sh" {
				t.Errorf("scripts %q, want base, lockdown, packages and privdrop only", got)
			}
			if !strings.Contains(all, provision.GuardCheckPath) {
				t.Errorf("no script installs the guard check %s", provision.GuardCheckPath)
			}
			if !strings.Contains(all, "PROJECT_DIR=''") {
				t.Error("the scripts name a project directory; a clone-mode box has none")
			}
			if n == policy.NetworkBroker && !strings.Contains(all, "41234") {
				t.Error("the broker port is not in the broker-mode scripts")
			}
		})
	}
}

// TestCloneSessionNetwork: an existing clone-mode box keeps its mode; a stricter one is adopted
// (fetch passes the defaults), a looser one than the configuration asks for is refused, and a
// broker box keeps its recorded port.
func TestCloneSessionNetwork(t *testing.T) {
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
			cfg.Network = tc.ask
			s, err := cloneSession(m, box, cfg)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "was created with network") {
					t.Fatalf("cloneSession = %v, want a refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.cfg.Network != tc.want || len(s.bundle.Scripts) == 0 {
				t.Errorf("network %s with %d scripts, want %s with scripts", s.cfg.Network, len(s.bundle.Scripts), tc.want)
			}
			if tc.want == policy.NetworkBroker && (s.brokerPort == 0 || (tc.port != 0 && s.brokerPort != tc.port)) {
				t.Errorf("broker port %d, want the recorded %d or a new one", s.brokerPort, tc.port)
			}
		})
	}
}

// refuseGuest fails the test when anything would run in the box.
type refuseGuest struct{ t *testing.T }

func (g refuseGuest) Exec(_ context.Context, argv []string, _ io.Reader, _ io.Writer) (int, error) {
	g.t.Errorf("the guest was asked to run %q", argv)
	return 1, nil
}

// TestDeliverCheckoutRefusesHostileGitmodules: with clone_uncommitted, an uncommitted edit that
// makes a tracked .gitmodules hostile refuses the delivery, naming the entry, before anything
// runs in the box; without it HEAD's clean .gitmodules is planned.
func TestDeliverCheckoutRefusesHostileGitmodules(t *testing.T) {
	gitBin, root := gitTestHome(t)
	top := filepath.Join(root, "work")
	git := func(args ...string) string {
		cmd := exec.Command(gitBin, append([]string{"-C", top}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(top, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	gm := filepath.Join(top, ".gitmodules")
	if err := os.WriteFile(gm, []byte("[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.invalid/lib.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".gitmodules")
	git("commit", "-qm", "init")
	git("update-index", "--add", "--cacheinfo", "160000,"+git("rev-parse", "HEAD")+",lib")
	git("commit", "-qm", "lib")
	if err := os.WriteFile(gm, []byte("[submodule \"lib\"]\n\tpath = lib\n\turl = ext::sh -c id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(root, ".corral", "clones", "work.git")
	_, err := deliverCheckout(context.Background(), refuseGuest{t}, top, store, "/home/u/src/work", true, clone.TransportsFull)
	if !errors.Is(err, clone.ErrRefused) || !strings.Contains(err.Error(), "submodule.lib.url") {
		t.Fatalf("deliverCheckout with the hostile edit: %v; want submodule.lib.url refused", err)
	}
	g, err := sandboxguest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	plan, err := deliverCheckout(context.Background(), g, top, store, g.Path("src/work"), false, clone.TransportsBroker)
	if err != nil || len(plan.Fetch) != 1 || plan.Fetch[0].URL != "https://example.invalid/lib.git" {
		t.Fatalf("deliverCheckout of HEAD = %+v, %v; want HEAD's lib planned\n%s", plan, err, g.Stderr())
	}
}

// TestCloneBrokerSkipsSubmoduleTransport: "git corral clone" into a broker-mode box (sandbox
// guest) delivers the checkout, skips a git:// submodule by name (broker mode fetches over https
// only) and runs nothing for it in the box.
func TestCloneBrokerSkipsSubmoduleTransport(t *testing.T) {
	gitBin, root := gitTestHome(t)
	src := filepath.Join(root, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `git init -q -b main && echo hi > README && git add README && git commit -qm init &&
git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),lib &&
printf '[submodule "lib"]\n\tpath = lib\n\turl = git://example.invalid/lib.git\n' > .gitmodules &&
git add .gitmodules && git commit -qm lib`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin:"+filepath.Dir(gitBin), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	g, err := sandboxguest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	old := boxGuest
	boxGuest = func(_ context.Context, _ *app, req guestRequest) (guestBox, error) {
		return guestBox{Guest: g, Dir: g.Path(req.Box), Network: policy.NetworkBroker}, nil
	}
	defer func() { boxGuest = old }()
	var out, errOut strings.Builder
	a := &app{stdout: &out, stderr: &errOut, getenv: os.Getenv}
	if code := a.main(context.Background(), []string{"clone", "--json", src, filepath.Join(root, "dest")}); code != 0 {
		t.Fatalf("clone exited %d: %s\n%s", code, errOut.String(), g.Stderr())
	}
	var doc cloneDoc
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Delivered || len(doc.Submodules) != 0 || len(doc.SubmodulesSkipped) != 1 || doc.SubmodulesSkipped[0].Path != "submodule.lib.url" {
		t.Errorf("clone doc %+v: want delivered, lib skipped", doc)
	}
	if !strings.Contains(errOut.String(), "submodule not fetched") || !strings.Contains(errOut.String(), "https") {
		t.Errorf("stderr %q does not warn about the skipped submodule", errOut.String())
	}
	if strings.Contains(g.Stderr(), "submodule") {
		t.Errorf("the guest ran a submodule command: %s", g.Stderr())
	}
}
