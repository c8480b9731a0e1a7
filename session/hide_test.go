package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// coverBody returns the body of the bundle's hide and box_dirs script, "" when it has none.
func coverBody(b provision.Bundle) string {
	for _, s := range b.Scripts {
		if s.Name == provision.CoverScriptName {
			return s.Body
		}
	}
	return ""
}

// TestRenderGuestCover: hide and box_dirs reach the guest as the per-box cover script, resolved
// on the host; a configuration without them renders none (the control), and a path the host
// refuses (a symlink, git metadata, an overlap with the git shadow) stops the rendering.
func TestRenderGuestCover(t *testing.T) {
	p := repoIn(t, t.TempDir())
	top := p.TopLevel
	os.MkdirAll(filepath.Join(top, "secrets"), 0o755)
	os.Symlink("/etc", filepath.Join(top, "link"))
	h := home.Home{Dir: t.TempDir()}
	cfg := policy.Default()
	cfg.Network = policy.NetworkBroker
	_, b, err := RenderGuest(context.Background(), p, h, "b", cfg, 4000)
	if err != nil {
		t.Fatal(err)
	}
	if coverBody(b) != "" {
		t.Fatalf("control: a configuration without hide or box_dirs rendered %s", provision.CoverScriptName)
	}
	cfg.Hide, cfg.BoxDirs = []string{"secrets/", "config/token.txt"}, []string{"node_modules"}
	_, b, err = RenderGuest(context.Background(), p, h, "b", cfg, 4000)
	if err != nil {
		t.Fatal(err)
	}
	body := coverBody(b)
	for _, want := range []string{"hide '" + top + "/secrets'", "hide '" + top + "/config/token.txt'", "box_dir '" + top + "/node_modules' "} {
		if !strings.Contains(body, want) {
			t.Errorf("cover script lacks %q:\n%s", want, body)
		}
	}
	if !provision.PerBox(provision.CoverScriptName) || b.ProductScripts()[provision.CoverScriptName] == "" {
		t.Errorf("%s must run in every box (PerBox) and be recorded at creation (ProductScripts)", provision.CoverScriptName)
	}
	for hide, want := range map[string]string{"link": "symlink", ".git/hooks": ".git", ".git": ".git"} {
		cfg.Hide, cfg.BoxDirs = []string{hide}, nil
		if _, _, err := RenderGuest(context.Background(), p, h, "b", cfg, 4000); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("hide %q: got %v, want a refusal naming %q", hide, err, want)
		}
	}
}

// TestPrepareCover: a box made with other hide or box_dirs lists is refused; with the same
// lists (drift elsewhere only, the control) a missing box_dirs directory is made on the host.
func TestPrepareCover(t *testing.T) {
	top := t.TempDir()
	cfg := policy.Default()
	cfg.BoxDirs = []string{"node_modules"}
	var notices []string
	b := &Box{Name: "b", Dir: top, Config: cfg, req: Request{UI: UI{Notice: func(s string) { notices = append(notices, s) }}}}
	for _, d := range []string{"+" + provision.CoverScriptName, "~" + provision.CoverScriptName} {
		if err := b.prepareCover(vm.Meta{Box: "b", GuestScripts: map[string]string{}}, []string{d}); err == nil || !strings.Contains(err.Error(), "other hide and box_dirs paths") {
			t.Errorf("drift %s: got %v, want a refusal", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(top, "node_modules")); err == nil {
		t.Fatal("a refused box still made node_modules on the host")
	}
	if err := b.prepareCover(vm.Meta{Box: "b"}, nil); err == nil {
		t.Error("a box that recorded no guest scripts was not refused: it cannot show it has the cover script")
	}
	if err := b.prepareCover(vm.Meta{Box: "b", GuestScripts: map[string]string{}}, []string{"+25-packages.sh"}); err != nil {
		t.Fatalf("control: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(top, "node_modules")); err != nil || !fi.IsDir() {
		t.Fatalf("node_modules not made on the host: %v", err)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "node_modules") {
		t.Errorf("notices %q: want one naming node_modules", notices)
	}
}
