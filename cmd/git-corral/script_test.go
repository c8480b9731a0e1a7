package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/git-corral/git-corral/sandbox"
)

// TestMain lets testscript run this test binary as the real git-corral: the scripts put it on
// PATH under that name and drive it through git itself (`git corral …`). 'git corral sandbox'
// re-executes its own binary inside bubblewrap under another name (sandbox.InitPath), where
// testscript would not recognise it, so the inside steps are answered here first, as the
// installed git-corral answers them.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "sandbox" && os.Args[2] == "--stage" {
		os.Exit(sandbox.Stage(os.Args[3]))
	}
	testscript.Main(m, map[string]func(){
		"git-corral": func() {
			a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
			os.Exit(a.main(context.Background(), os.Args[1:]))
		},
	})
}

func TestScripts(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed by the CLI scripts and is not on PATH: %v", err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		Setup:               hermeticGit,
		RequireExplicitExec: true,
		Cmds:                scriptCmds,
	})
}

// hermeticGit points HOME, CORRAL_HOME and git's global config into the script's work dir, and
// pins identities and dates so that scripted repositories are reproducible.
func hermeticGit(e *testscript.Env) error {
	home := filepath.Join(e.WorkDir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	for k, v := range map[string]string{
		"HOME":                home,
		"CORRAL_HOME":         filepath.Join(home, ".corral"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME":     "Corral Test",
		"GIT_AUTHOR_EMAIL":    "test@corral.invalid",
		"GIT_AUTHOR_DATE":     "2026-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME":  "Corral Test",
		"GIT_COMMITTER_EMAIL": "test@corral.invalid",
		"GIT_COMMITTER_DATE":  "2026-01-01T00:00:00Z",
		"CORRAL_LIMACTL":      "",
		"CORRAL_LIMA_PREFIX":  filepath.Join(e.WorkDir, "no-lima"),
		"NO_COLOR":            "",
		"TERM":                "dumb",
	} {
		e.Setenv(k, v)
	}
	return os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[init]\n\tdefaultBranch = main\n"), 0o644)
}
