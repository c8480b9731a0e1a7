package session

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
)

// previewHost is a host in a temp dir: root/anc/home is $HOME (so root/anc is an ancestor of
// it), $CORRAL_HOME is ~/.corral, git's global config lies outside both, and limactl is a
// file that cannot run, so that an Open that gets past every guard stops before any box.
type previewHost struct {
	root, home string
	env        map[string]string
}

func newPreviewHost(t *testing.T) *previewHost {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &previewHost{root: root, home: filepath.Join(root, "anc", "home")}
	for _, d := range []string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".config/gcloud",
		".corral", ".lima", ".local/bin", ".cache", "bin", "data", "src"} {
		if err := os.MkdirAll(filepath.Join(f.home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitcfg := filepath.Join(root, "gitcfg", ".gitconfig")
	f.env = map[string]string{"HOME": f.home, home.Env: filepath.Join(f.home, ".corral"),
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": gitcfg,
		"CORRAL_LIMACTL": filepath.Join(root, "no-limactl"), "CORRAL_NO_CONNECTION_HOLDER": "1"}
	for k, v := range f.env {
		t.Setenv(k, v) // git itself, run by project.Find, reads the process environment
	}
	return f
}

func (f *previewHost) getenv(k string) string { return f.env[k] }

func (f *previewHost) git(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

// repo makes a git checkout at dir with one commit.
func (f *previewHost) repo(t *testing.T, dir string) string {
	t.Helper()
	f.git(t, "init", "-q", dir)
	f.git(t, "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

// trusted writes $CORRAL_HOME/config.toml.
func (f *previewHost) trusted(t *testing.T, toml string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.env[home.Env], "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// previewAndOpen runs Preview on the checkout at dir and Open as 'git corral run --yes' would.
func (f *previewHost) previewAndOpen(t *testing.T, dir string) (preview, open error) {
	t.Helper()
	ctx := context.Background()
	p, err := project.Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := home.Resolve(f.getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(ctx, Request{}, policy.LoadOptions{Home: h, TopLevel: p.TopLevel, Box: p.Box})
	if err != nil {
		t.Fatal(err)
	}
	preview = Preview(ctx, h, p, cfg, f.getenv)
	_, open = Open(ctx, Request{Cmd: "run", Dir: dir, Getenv: f.getenv, Yes: true})
	return preview, open
}

// TestPreviewRefusesAsOpen: for each checkout a session refuses before it records or boots
// anything — the project at $HOME, at an ancestor of $HOME, holding $CORRAL_HOME, a linked
// worktree whose main repository lies in ~/.config, a trusted mounts entry of each secret
// path, mounts in clone mode — Preview returns the very error (and hint) Open returns, naming
// the path and the place, and Open leaves no audit record. The controls (a project in ~/src, a
// harmless mount, a worktree of a repository in ~/src) preview clean, and Open gets past every
// guard: it writes its audit start record and stops only at limactl.
func TestPreviewRefusesAsOpen(t *testing.T) {
	type setup func(t *testing.T, f *previewHost) string
	inSrc := func(t *testing.T, f *previewHost) string { return f.repo(t, filepath.Join(f.home, "src", "proj")) }
	mount := func(entry string) setup {
		return func(t *testing.T, f *previewHost) string {
			f.trusted(t, "mounts = ["+`"`+entry+`"`+"]\n")
			return inSrc(t, f)
		}
	}
	worktreeOfMainIn := func(rel string) setup {
		return func(t *testing.T, f *previewHost) string {
			main := f.repo(t, filepath.Join(f.home, rel))
			wt := filepath.Join(f.home, "src", "wt")
			f.git(t, "-C", main, "worktree", "add", "-q", wt, "-b", "wt")
			return wt
		}
	}
	for _, c := range []struct {
		name  string
		setup setup
		want  string // "" for a control
	}{
		{"project at $HOME", func(t *testing.T, f *previewHost) string { return f.repo(t, f.home) }, `it is the home directory ($HOME) "{HOME}"`},
		{"project at an ancestor of $HOME", func(t *testing.T, f *previewHost) string { return f.repo(t, filepath.Dir(f.home)) }, `it contains the home directory ($HOME) "{HOME}"`},
		{"project holding $CORRAL_HOME", func(t *testing.T, f *previewHost) string {
			dir := f.repo(t, filepath.Join(f.root, "holder"))
			f.env[home.Env] = filepath.Join(dir, ".corral")
			return dir
		}, `it contains git corral's state directory ($CORRAL_HOME) "{ROOT}/holder/.corral"`},
		{"worktree of a repository in ~/.config", worktreeOfMainIn(".config/dots"), `lies inside the host's configuration directory (~/.config) "{HOME}/.config"`},
		{"mounts ~/.ssh", mount("~/.ssh:/srv/x"), `mounts entry "{HOME}/.ssh": it is the host's SSH directory (~/.ssh)`},
		{"mounts ~/.gnupg", mount("~/.gnupg:/srv/x"), `it is GnuPG's home (~/.gnupg)`},
		{"mounts ~/.aws", mount("~/.aws:/srv/x"), `it is a cloud credential directory (~/.aws)`},
		{"mounts ~/.azure", mount("~/.azure:/srv/x"), `it is a cloud credential directory (~/.azure)`},
		{"mounts ~/.kube", mount("~/.kube:/srv/x"), `it is a cloud credential directory (~/.kube)`},
		{"mounts ~/.docker", mount("~/.docker:/srv/x"), `it is a cloud credential directory (~/.docker)`},
		{"mounts ~/.config/gcloud", mount("~/.config/gcloud:/srv/x"), `it is a cloud credential directory (~/.config/gcloud)`},
		{"mounts $CORRAL_HOME", mount("~/.corral:/srv/x"), `it is git corral's state directory ($CORRAL_HOME)`},
		{"mounts ~/.lima", mount("~/.lima:/srv/x"), `it is Lima's default home (~/.lima)`},
		{"mounts ~/.config", mount("~/.config:/srv/x"), `it is the host's configuration directory (~/.config)`},
		{"mounts ~/.local/bin", mount("~/.local/bin:/srv/x"), `it lies inside ~/.local`},
		{"mounts ~/.cache", mount("~/.cache:/srv/x"), `it is the host's cache directory (~/.cache)`},
		{"mounts ~/bin", mount("~/bin:/srv/x"), `it is ~/bin`},
		{"mounts $HOME", mount("~:/srv/x"), `it is the home directory ($HOME)`},
		{"mounts /etc", mount("/etc:/srv/x"), `it is the host directory "/etc"`},
		{"mounts /", mount("/:/srv/x"), `it is the root of the host`},
		{"mounts in clone mode", func(t *testing.T, f *previewHost) string {
			f.trusted(t, "mounts = [\"~/data:/srv/x\"]\nsource = \"clone\"\n")
			return inSrc(t, f)
		}, `a clone-mode box mounts nothing of the host`},
		{"control: a project in ~/src", inSrc, ""},
		{"control: a harmless mount", mount("~/data:/srv/data"), ""},
		{"control: a worktree of a repository in ~/src", worktreeOfMainIn("src/main"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newPreviewHost(t)
			dir := c.setup(t, f)
			preview, open := f.previewAndOpen(t, dir)
			h, _ := home.Resolve(f.getenv)
			_, statErr := os.Stat(h.SessionsLog())
			if c.want == "" {
				if preview != nil {
					t.Fatalf("Preview: %v, want clean", preview)
				}
				if open == nil || !strings.Contains(open.Error(), "CORRAL_LIMACTL") || statErr != nil {
					t.Fatalf("Open: %v (audit log: %v), want it past every guard: audited, stopped at limactl", open, statErr)
				}
				return
			}
			want := strings.NewReplacer("{HOME}", f.home, "{ROOT}", f.root).Replace(c.want)
			if preview == nil || !strings.Contains(preview.Error(), want) {
				t.Fatalf("Preview: %v\nwant a refusal saying %q", preview, want)
			}
			if open == nil || open.Error() != preview.Error() || hint.Of(open) != hint.Of(preview) || hint.Of(open) == "" {
				t.Fatalf("Open and Preview differ:\nOpen:    %v (hint %q)\nPreview: %v (hint %q)", open, hint.Of(open), preview, hint.Of(preview))
			}
			if !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("Open refused but left an audit log (%v): it must refuse before anything is recorded", statErr)
			}
		})
	}
}

// TestPreviewRefusesAsRenderGuest: hide and box_dirs are resolved on the host while a session
// renders the guest; a hide path through a symlink in the checkout is refused by Preview with
// the error RenderGuest (Open's render step, and provision render's) returns. The control is
// the same path as a plain file.
func TestPreviewRefusesAsRenderGuest(t *testing.T) {
	f := newPreviewHost(t)
	dir := f.repo(t, filepath.Join(f.home, "src", "proj"))
	if err := os.WriteFile(filepath.Join(dir, policy.RepoFile), []byte("hide = [\"secret\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "secret")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := project.Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := home.Resolve(f.getenv)
	load := func() *policy.Config {
		cfg, err := LoadConfig(ctx, Request{}, policy.LoadOptions{Home: h, TopLevel: p.TopLevel, Box: p.Box})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	preview := Preview(ctx, h, p, load(), f.getenv)
	_, _, render := RenderGuest(ctx, p, h, p.Box, load(), 18080)
	if preview == nil || render == nil || preview.Error() != render.Error() || !strings.Contains(preview.Error(), `"secret"`) {
		t.Fatalf("Preview: %v\nRenderGuest: %v\nwant the same refusal naming \"secret\"", preview, render)
	}
	if err := os.Remove(filepath.Join(dir, "secret")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Preview(ctx, h, p, load(), f.getenv); err != nil {
		t.Fatalf("control, a plain file: Preview: %v, want clean", err)
	}
	if _, _, err := RenderGuest(ctx, p, h, p.Box, load(), 18080); err != nil {
		t.Fatalf("control, a plain file: RenderGuest: %v", err)
	}
}
