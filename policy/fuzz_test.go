package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/pelletier/go-toml/v2"
)

// FuzzLoad feeds arbitrary bytes to Load as the repository's .corral.toml (over a trusted
// global file that sets network = "broker") and checks what must hold for every input:
//   - Load returns within its deadline, never panics, and fails only with *Violations;
//   - every violation's text is printable (no raw control or bidi character reaches a terminal)
//     and its line is within the file;
//   - when Load accepts the file, go-toml's own decoder accepts it too, and every top-level key
//     it decodes is spelled exactly as a known key that is not trusted-only; nothing from the
//     repository set a trusted-only value; the network was not loosened below broker.
func FuzzLoad(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	root := f.TempDir()
	h := home.Home{Dir: filepath.Join(root, "corral")}
	top := filepath.Join(root, "repo")
	for _, d := range []string{top, filepath.Join(h.Dir, "projects")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(top, "setup.sh"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(h.GlobalConfig(), []byte("network = \"broker\"\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	repoFile := filepath.Join(top, RepoFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(repoFile, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		eff, err := Load(ctx, LoadOptions{Home: h, TopLevel: top, Box: "fuzz-000000", Host: testHost})
		if err != nil {
			var vs *Violations
			if !errors.As(err, &vs) || len(vs.List) == 0 {
				t.Fatalf("Load failed without violations: %v", err)
			}
			lines := strings.Count(string(data), "\n") + 1
			for _, v := range vs.List {
				if v.Line < 0 || v.Line > lines {
					t.Errorf("violation line %d outside a %d-line file: %v", v.Line, lines, v)
				}
			}
			assertPrintable(t, err.Error())
			return
		}
		var m map[string]any
		if err := toml.Unmarshal(data, &m); err != nil {
			t.Fatalf("Load accepted a file go-toml refuses: %v", err)
		}
		for k := range m {
			spec := lookupKey(k)
			if spec == nil || spec.Class == TrustedOnly {
				t.Fatalf("Load accepted the repository key %q", k)
			}
		}
		for k, o := range eff.Origins {
			name, _, _ := strings.Cut(strings.SplitN(k, "[", 2)[0], ".")
			if o.Layer == LayerRepository && lookupKey(name).Class == TrustedOnly {
				t.Fatalf("the repository set trusted-only %s", k)
			}
		}
		if eff.Config.Network == NetworkFull {
			t.Fatalf("the repository loosened network to full")
		}
	})
}

// fuzzSeeds are the starting corpus: the templates, and one of each hostile shape.
func fuzzSeeds() []string {
	seeds := []string{
		Template(false), Template(true),
		"network = \"offline\"\ncpus = 2\npackages = [\"git\"]\nprovision = [\"setup.sh\"]\n[env]\nA = \"1\"\n",
		`NETWORK = "full"`, `"networ\u212A" = "full"`, `"net\u0077ork" = "full"`,
		`egress = ["evil.example"]`, `env_from_host = { A = "HOME" }`, `git_tokens."github.com" = "T"`,
		"[env]\nA = \"1\"\n[env]\nB = \"2\"\n", "network = \"offline\"\nnetwork = \"full\"\n",
		`packages = [[["x"]]]`, `env.a.b.c = "x"`, "[[mounts]]\npath = \"/\"\n",
		`cpus = 4.0`, `network = 1`, `hide = ["../x", ".git"]`, "\"a\\u001b[2J\" = 1\n",
		"env = { A = \"1\" }\nenv.B = \"2\"\n", "a = \"\"\"\nmulti\n\"\"\"\n", "x = 1979-05-27T07:32:00Z\n",
	}
	return seeds
}
