package provision

import (
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

// TestRecipeDropsPerBoxScripts: a golden base is built from the product's scripts only; the git
// shadow (one checkout's metadata) and the repository's scripts (they need the project mounted)
// stay per box, whatever the mode and however the repository names its scripts.
func TestRecipeDropsPerBoxScripts(t *testing.T) {
	for _, mode := range []policy.Network{policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline} {
		opts := testOptions(mode)
		opts.GitShadowScript = "#!/bin/sh\necho shadow\n"
		opts.Repo = append(opts.Repo, RepoScript{Path: "40-gitshadow.sh", Body: []byte("echo x\n")}, RepoScript{Path: "10-base.sh", Body: []byte("echo y\n")})
		b, err := Render(opts)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range b.Recipe().Scripts {
			names = append(names, s.Name)
		}
		want := "05-box.sh 10-base.sh 20-lockdown.sh 25-packages.sh 30-privdrop.sh"
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%s: recipe %s, want %s", mode, got, want)
		}
		if n := len(b.Scripts); n != 10 {
			t.Errorf("%s: Recipe changed the bundle: %d scripts, want 10", mode, n)
		}
	}
}

func TestPerBox(t *testing.T) {
	for name, want := range map[string]bool{
		"40-gitshadow.sh": true, "50-repo-01-setup-sh.sh": true, "50-repo-": true,
		"10-base.sh": false, "20-lockdown.sh": false, "25-packages.sh": false, "30-privdrop.sh": false,
		"40-gitshadow.sh.bak": false, "x50-repo-1.sh": false, "": false,
	} {
		if got := PerBox(name); got != want {
			t.Errorf("PerBox(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestProductScriptsSameForEveryProject: the product's scripts are byte for byte the same for
// every project of a recipe (the project's mount point reaches them through 05-box), so a box
// resumed from a golden state built for another project runs none of them again; only 05-box
// and the per-box scripts differ.
func TestProductScriptsSameForEveryProject(t *testing.T) {
	for _, mode := range []policy.Network{policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline} {
		render := func(dir string) map[string]string {
			opts := testOptions(mode)
			opts.ProjectDir = dir
			b, err := Render(opts)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, s := range b.Scripts {
				out[s.Name] = s.Body
			}
			return out
		}
		a, b := render("/home/dev/alpha"), render("/srv/work/beta project")
		for name, body := range a {
			same := body == b[name]
			switch {
			case name == BoxScriptName:
				if same || !strings.Contains(b[name], "'/srv/work/beta project'") {
					t.Errorf("%s: %s does not carry the project's path", mode, name)
				}
			case PerBox(name):
			case !same:
				t.Errorf("%s: %s differs between two projects", mode, name)
			}
		}
	}
}
