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

// TestInstallFishDefaultPrefix: with the default PREFIX, make install puts fish's completions and
// its git hook where fish, started by a user with a fresh environment (no XDG_DATA_DIRS, an empty
// home), reads them: Debian's fish 3.6 never reads /usr/local/share/fish, where they went before
// (scripts/fish-dir.sh). It reads make's plan (make -n), so nothing is written to the host.
func TestInstallFishDefaultPrefix(t *testing.T) {
	for _, tool := range []string{"make", "fish"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by this test and is not installed (scripts/setup.sh installs it): %v", tool, err)
		}
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	plan := exec.Command("make", "-n", "-s", "install")
	plan.Dir = root
	out, err := plan.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	targets := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "completion fish"); i >= 0 && strings.Contains(line, " > ") {
			kind := "completions"
			if strings.Contains(line, "--git-hook") {
				kind = "conf"
			}
			targets[kind] = filepath.Dir(strings.TrimSpace(line[strings.LastIndex(line, " > ")+3:]))
		}
	}
	if len(targets) != 2 {
		t.Fatalf("make -n install names %d fish targets, want the completions and the git hook:\n%s", len(targets), out)
	}
	home := t.TempDir()
	ask := exec.Command("fish", "-c", `printf 'complete %s\n' $fish_complete_path; printf 'conf %s\n' $__fish_vendor_confdirs $__fish_sysconf_dir/conf.d`)
	ask.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb"}
	paths, err := ask.CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, paths)
	}
	reads := func(kind, dir string) bool {
		return strings.Contains("\n"+string(paths), "\n"+kind+" "+dir+"\n")
	}
	if !reads("complete", targets["completions"]) {
		t.Errorf("make install puts fish's completions in %s, which fish does not read; it reads:\n%s", targets["completions"], paths)
	}
	if !reads("conf", targets["conf"]) {
		t.Errorf("make install puts fish's git hook in %s, which fish does not read; it reads:\n%s", targets["conf"], paths)
	}
	// What the default prefix's own directory would have given, for the record (distributions differ).
	t.Logf("fish reads /usr/local/share/fish/vendor_completions.d: %v", reads("complete", "/usr/local/share/fish/vendor_completions.d"))
}
