package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/vm"
)

// TestProjectBox: the box every command acts on follows the same rule as Open's renameBox —
// the trusted name (global or the derived box's per-project file) when set, else the derived
// name (control); name in the repository's .corral.toml is never read for it; a box recorded
// for another checkout is refused; a broken trusted file is an error naming it, never a
// silent fall back to the derived box.
func TestProjectBox(t *testing.T) {
	top := t.TempDir()
	p := &project.Project{TopLevel: top, Box: "me-abc123"}
	cases := []struct {
		label, global, perProject, repo, want string
		err                                   error
		errHas                                string
	}{
		{label: "no name: derived", want: "me-abc123"},
		{label: "per-project name", perProject: `name = "work"`, want: "work"},
		{label: "global name", global: `name = "work"`, want: "work"},
		{label: "per-project wins over global", global: `name = "g"`, perProject: `name = "work"`, want: "work"},
		{label: "repository name is not read", repo: `name = "evil"`, want: "me-abc123"},
		{label: "box of another checkout", perProject: `name = "theirs"`, err: ErrBoxOfAnotherProject, errHas: "/src/other"},
		{label: "broken trusted file", perProject: `name = `, errHas: "projects/me-abc123.toml"},
		{label: "name not a string", perProject: `name = 3`, errHas: "name"},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			h := home.Home{Dir: t.TempDir()}
			must(t, os.MkdirAll(h.Boxes(), 0o700))
			must(t, (&vm.Manager{Home: h}).WriteMeta(vm.Meta{Box: "theirs", Project: "/src/other"}))
			must(t, os.MkdirAll(filepath.Dir(h.ProjectConfig(p.Box)), 0o700))
			write := func(path, text string) {
				os.Remove(path)
				if text != "" {
					must(t, os.WriteFile(path, []byte(text+"\n"), 0o600))
				}
			}
			write(h.GlobalConfig(), c.global)
			write(h.ProjectConfig(p.Box), c.perProject)
			write(filepath.Join(top, policy.RepoFile), c.repo)
			got, err := ProjectBox(context.Background(), h, p)
			if c.errHas == "" {
				if err != nil || got != c.want {
					t.Fatalf("ProjectBox = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if err == nil || (c.err != nil && !errors.Is(err, c.err)) || !strings.Contains(err.Error(), c.errHas) {
				t.Fatalf("ProjectBox = %q, %v; want an error (%v) naming %q", got, err, c.err, c.errHas)
			}
		})
	}
}

// TestProjectBoxAgreesWithOpen: for the same trusted files, the box commands act on is the box
// Open's renameBox picks from the full configuration.
func TestProjectBoxAgreesWithOpen(t *testing.T) {
	top := t.TempDir()
	h := home.Home{Dir: t.TempDir()}
	must(t, os.MkdirAll(filepath.Dir(h.ProjectConfig("me-abc123")), 0o700))
	must(t, os.WriteFile(h.ProjectConfig("me-abc123"), []byte("name = \"work\"\n"), 0o600))
	p := &project.Project{TopLevel: top, Box: "me-abc123"}
	got, err := ProjectBox(context.Background(), h, p)
	must(t, err)
	cfg, err := LoadConfig(context.Background(), Request{}, policy.LoadOptions{Home: h, TopLevel: top, Box: p.Box})
	must(t, err)
	var pf *guardPrefetch
	must(t, renameBox(h, p, cfg, &pf))
	if got != "work" || p.Box != got {
		t.Fatalf("commands act on %q, Open on %q; want both \"work\"", got, p.Box)
	}
}

// BenchmarkProjectBox is what every command that uses a box pays for name: the trusted layers
// read and parsed, no repository file, no host measurement.
func BenchmarkProjectBox(b *testing.B) {
	top := b.TempDir()
	h := home.Home{Dir: b.TempDir()}
	if err := os.MkdirAll(filepath.Dir(h.ProjectConfig("me-abc123")), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(h.ProjectConfig("me-abc123"), []byte("name = \"work\"\nports = [\"18080:8080\"]\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	p := &project.Project{TopLevel: top, Box: "me-abc123"}
	for i := 0; i < b.N; i++ {
		if _, err := ProjectBox(context.Background(), h, p); err != nil {
			b.Fatal(err)
		}
	}
}
