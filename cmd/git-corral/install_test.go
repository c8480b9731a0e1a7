package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstall runs 'make install' into a temporary prefix and checks what a user gets from it:
// 'git help corral' opens the installed man page, and bash completion loaded the way
// bash-completion loads it (no manual sourcing) offers the subcommands for 'git corral <TAB>'.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: make install builds the binary again")
	}
	for _, tool := range []string{"make", "man", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by this test and is not installed (scripts/setup.sh installs it): %v", tool, err)
		}
	}
	prefix := t.TempDir()
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	cmd := exec.Command("make", "-s", "install", "PREFIX="+prefix)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	env := append(os.Environ(),
		"PATH="+filepath.Join(prefix, "bin")+":"+os.Getenv("PATH"),
		"MANPATH="+filepath.Join(prefix, "share", "man"),
		"MANPAGER=cat", "PAGER=cat", "GIT_PAGER=cat", "MANWIDTH=100",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+prefix,
		"XDG_DATA_DIRS="+filepath.Join(prefix, "share"),
	)

	help := exec.Command("git", "help", "corral")
	help.Env = env
	out, err := help.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "run coding agents and untrusted repositories") {
		t.Fatalf("git help corral did not show the installed page (%v):\n%s", err, out)
	}

	script := `source /usr/share/bash-completion/bash_completion
COMP_WORDS=(git corral ""); COMP_CWORD=2; COMP_LINE="git corral "; COMP_POINT=${#COMP_LINE}
_completion_loader git >/dev/null 2>&1 || source /usr/share/bash-completion/completions/git
__git_wrap__git_main
printf '%s\n' "${COMPREPLY[@]}"`
	comp := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	comp.Env = env
	out, err = comp.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion: %v\n%s", err, out)
	}
	for _, want := range []string{"start ", "info ", "completion "} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("git corral <TAB> did not offer %q; got:\n%s", want, out)
		}
	}
}
