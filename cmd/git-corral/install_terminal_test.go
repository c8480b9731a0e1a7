//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test in this file is issue #32's "installed where each system looks": after a plain
// `make install` (the default PREFIX, /usr/local), a new user, whose home is empty, types
// `git corral <TAB>` in bash, zsh and fish in a real terminal (tmux) and is offered the
// subcommands.
//
// The install is real but never reaches the host: the test binary runs itself again in a
// private mount namespace (unshare -m --propagation private) and there mounts an empty tmpfs
// over the nearest existing directory above each one `make install` writes to. On Debian that
// is /usr/local/bin, /usr/local/lib, /usr/local/share, /etc/fish/completions and
// /etc/fish/conf.d: never /usr/local itself, which holds the Go toolchain the install builds
// with (/usr/local/go), and never /etc/fish, whose config.fish fish reads. Before the install a
// marker file is written into each tmpfs; afterwards the host must not see it (the control that
// the namespace held), and the host's /usr/local/bin/git-corral must be as it was.
//
// The new user is nobody with an empty temporary HOME, and each shell is what tmux starts with
// default-shell set and no command: a login shell, as a console or ssh login starts it.
//   - bash: Debian's /etc/bash.bashrc leaves bash-completion commented out and an empty home has
//     no ~/.bashrc, so bash-completion comes from the login's /etc/profile.d/bash_completion.sh.
//   - zsh: an empty home starts zsh-newuser-install. Without compinit zsh completes nothing for
//     anyone, so the user is taken to answer (2), the choice Debian's wizard adds: it copies
//     /etc/zsh/newuser.zshrc.recommended, which runs compinit, to ~/.zshrc and sources it. (The
//     wizard's completion menu, through compinstall, writes the same two lines, `autoload -Uz
//     compinit` and `compinit`; docs/man/git-corral.1.md says the user needs them.)
//   - fish: no setup; it reads /etc/fish's completions and conf.d itself.
//
// Each shell runs twice: first with that shell's installed completion files hidden under one
// more empty tmpfs (the control: the binary is installed and runs, yet `git corral <TAB>`
// offers the project's files, not the subcommands), then with them in place.
//
// What each shell reads on Debian 12 with the default prefix, and so why it passes:
// bash-completion loads git-corral from /usr/local/share/bash-completion/completions (its
// default XDG_DATA_DIRS is /usr/local/share:/usr/share); Debian's zsh has
// /usr/local/share/zsh/site-functions first on $fpath; fish reads /etc/fish, where
// scripts/fish-dir.sh sends its files because it does not read /usr/local/share/fish.

// terminalInstallEnv carries the marker file's name to the test binary run in the namespace;
// terminalTmpfsEnv the directories to mount tmpfs over; terminalHostNSEnv the host's mount
// namespace, which the namespace side must not be in.
const (
	terminalInstallEnv = "CORRAL_TEST_INSTALL_NAMESPACE"
	terminalTmpfsEnv   = "CORRAL_TEST_INSTALL_TMPFS"
	terminalHostNSEnv  = "CORRAL_TEST_INSTALL_HOST_MNTNS"
)

// termSubcommands must be listed for `git corral <TAB>` once installed; without the completion
// files the shells offer the project's one file, termProbeFile, instead. start is listed late
// (33rd of 38), so a list cut short by the screen fails: the pane is 100 rows high because
// fish's pager uses about half of them.
var termSubcommands = []string{"start", "info", "completion"}

const termProbeFile = "probe-file"

// listed says whether the screen lists w as a candidate: a whole word at the start of a line or
// after a column gap of two spaces or more (bash's columns; zsh's "start  -- boot …"; fish's
// "start  (boot …)"), so that a word inside a description ("(what start runs)") or on the
// command line does not count. The line of the ready marker never counts.
func listed(screen, w string) bool {
	re := regexp.MustCompile(`(^|\s\s)` + regexp.QuoteMeta(w) + `(\s|$)`)
	for _, l := range strings.Split(screen, "\n") {
		if !strings.Contains(l, "READY") && re.MatchString(l) {
			return true
		}
	}
	return false
}

// notListed returns the words of want that the screen does not list.
func notListed(screen string, want ...string) []string {
	var missing []string
	for _, w := range want {
		if !listed(screen, w) {
			missing = append(missing, w)
		}
	}
	return missing
}

// listedOf returns the subcommands of termSubcommands the screen lists.
func listedOf(screen string) []string {
	var shown []string
	for _, w := range termSubcommands {
		if listed(screen, w) {
			shown = append(shown, w)
		}
	}
	return shown
}

// offersFile says whether the shell fell back to the project's files: it listed termProbeFile
// (bash) or put it on the command line, the one match (zsh, fish).
func offersFile(screen string) bool {
	return probeFileRE.MatchString(screen)
}

// probeFileRE is termProbeFile as a whole word anywhere, on the command line too (shows wants a
// candidate at the start of a line or a column).
var probeFileRE = regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(termProbeFile) + `(\s|$)`)

// termShell is one shell the new user might have as their login shell.
type termShell struct {
	name string
	path string // resolved on PATH to the absolute path tmux's default-shell needs
	tabs int    // TABs until the candidates are listed: bash lists on the second
}

var termShells = []termShell{{"bash", "bash", 2}, {"zsh", "zsh", 2}, {"fish", "fish", 1}}

// TestCompletionTerminalDefaultPrefix: see the top of this file.
func TestCompletionTerminalDefaultPrefix(t *testing.T) {
	if marker := os.Getenv(terminalInstallEnv); marker != "" {
		terminalInNamespace(t, marker)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it runs make install with the default prefix in a private mount namespace over tmpfs (unshare -m); CI runs the unit suite as root")
	}
	for _, tool := range []string{"make", "unshare", "setpriv", "tmux", "git", "bash", "zsh", "fish"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by this test and is not installed (scripts/setup.sh installs it): %v", tool, err)
		}
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	points := tmpfsPoints(t, installPlanOf(t, root).dirs, root)
	marker := fmt.Sprintf(".corral-install-test-%d", os.Getpid())
	hostBin := "/usr/local/bin/git-corral"
	before, errBefore := os.Lstat(hostBin)
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("unshare", "-m", "--propagation", "private", os.Args[0],
		"-test.run=^TestCompletionTerminalDefaultPrefix$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), terminalInstallEnv+"="+marker,
		terminalTmpfsEnv+"="+strings.Join(points, ":"), terminalHostNSEnv+"="+ns)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCompletionTerminalDefaultPrefix") {
		t.Fatalf("the install and the shells in a private mount namespace: %v\n%s", err, out)
	}
	t.Logf("in the namespace:\n%s", out)

	// The control that the namespace held: the markers the namespace side saw in its tmpfs are
	// not on the host, and the host's installed binary (if any) is untouched.
	for _, p := range points {
		if _, err := os.Lstat(filepath.Join(p, marker)); !os.IsNotExist(err) {
			t.Errorf("the marker written in the namespace is on the host at %s (%v): the tmpfs or the install leaked out of the namespace", filepath.Join(p, marker), err)
		}
	}
	after, errAfter := os.Lstat(hostBin)
	switch {
	case os.IsNotExist(errBefore) != os.IsNotExist(errAfter):
		t.Errorf("the host's %s changed existence during the test (before: %v, after: %v)", hostBin, errBefore, errAfter)
	case errBefore == nil && (before.ModTime() != after.ModTime() || before.Size() != after.Size()):
		t.Errorf("the host's %s changed during the test: the install reached the host", hostBin)
	}
}

// installPlan is what `make install` with the default prefix writes: the directories it makes
// and, for each shell, the directories of its completion files.
type installPlan struct {
	dirs []string
	comp map[string][]string
}

// makeEnv is the environment with nothing that would change make's PREFIX or destination:
// PREFIX and the like as variables, and MAKEFLAGS, which carries `make test PREFIX=…` down.
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "PREFIX", "DESTDIR", "BINDIR", "FISH_COMPLETIONSDIR", "FISH_CONFDIR", "MAKEFLAGS", "MFLAGS", "MAKELEVEL":
		default:
			env = append(env, kv)
		}
	}
	return env
}

// installPlanOf reads make's plan (make -n install, no PREFIX).
func installPlanOf(t *testing.T, root string) installPlan {
	t.Helper()
	cmd := exec.Command("make", "-n", "-s", "install")
	cmd.Dir, cmd.Env = root, makeEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	plan := installPlan{comp: map[string][]string{}}
	for _, line := range strings.Split(strings.ReplaceAll(string(out), "\\\n", " "), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] == "install" && f[1] == "-d" {
			plan.dirs = append(plan.dirs, f[2:]...)
		}
		if i := strings.Index(line, " completion "); i >= 0 && strings.Contains(line, " > ") {
			shell := strings.Fields(line[i:])[1]
			plan.comp[shell] = append(plan.comp[shell], filepath.Dir(strings.TrimSpace(line[strings.LastIndex(line, " > ")+3:])))
		}
	}
	if len(plan.dirs) == 0 || len(plan.comp["bash"]) != 1 || len(plan.comp["zsh"]) != 1 || len(plan.comp["fish"]) != 2 {
		t.Fatalf("make -n install: want its install -d line and a completion file for bash, zsh and fish (two), got dirs %q and %q:\n%s", plan.dirs, plan.comp, out)
	}
	return plan
}

// tmpfsPoints returns the directories to mount an empty tmpfs over so that every directory of
// dirs lands on one: for each, the nearest one that exists, dropping any below another. None may
// hold what the test runs on (the Go toolchain and its caches, the repository, the temporary
// directory) or be shallower than /usr/local/bin.
func tmpfsPoints(t *testing.T, dirs []string, root string) []string {
	t.Helper()
	var points []string
	for _, d := range dirs {
		for d != "/" {
			if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
				break
			}
			d = filepath.Dir(d)
		}
		points = append(points, d)
	}
	keep := []string{root, os.TempDir()}
	goenv := exec.Command("go", "env", "GOROOT", "GOCACHE", "GOMODCACHE")
	goenv.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
	out, err := goenv.Output()
	if err != nil {
		t.Fatalf("go env (make install builds with go): %v", err)
	}
	keep = append(keep, strings.Fields(string(out))...)
	var kept []string
	for _, p := range points {
		if strings.Count(p, "/") < 3 {
			t.Fatalf("make install writes under %s, too near the root to hide under a tmpfs; install with the default prefix on a Debian-like host", p)
		}
		for _, k := range keep {
			if within(k, p) {
				t.Fatalf("a tmpfs over %s (where make install writes) would hide %s, which the test needs", p, k)
			}
		}
		below := false
		for _, q := range points {
			below = below || (q != p && within(p, q))
		}
		if !below && !containsString(kept, p) {
			kept = append(kept, p)
		}
	}
	return kept
}

// within says whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// terminalInNamespace is the namespace side: tmpfs, make install, then each shell.
func terminalInNamespace(t *testing.T, marker string) {
	ns, err := os.Readlink("/proc/self/ns/mnt")
	host := os.Getenv(terminalHostNSEnv)
	pid1, _ := os.Readlink("/proc/1/ns/mnt")
	if err != nil || host == "" || ns == host || ns == pid1 {
		t.Fatalf("not in a mount namespace of its own (%q; the host's is %q, pid 1's %q; %v): refusing to mount over the host's directories", ns, host, pid1, err)
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	devs := map[uint64]string{}
	for _, p := range strings.Split(os.Getenv(terminalTmpfsEnv), ":") {
		mountEmpty(t, p)
		if err := os.WriteFile(filepath.Join(p, marker), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(p, marker)); err != nil {
			t.Fatalf("the marker just written is not visible in the namespace: %v", err)
		}
		devs[devOf(t, p)] = p
	}
	install := exec.Command("make", "-s", "install")
	install.Dir, install.Env = root, makeEnv()
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("make install (default prefix): %v\n%s", err, out)
	}
	plan := installPlanOf(t, root)
	for _, d := range plan.dirs {
		if _, ok := devs[devOf(t, d)]; !ok {
			t.Fatalf("make install wrote to %s, which is on none of the test's tmpfs (%v)", d, devs)
		}
	}
	t.Logf("make install (default prefix) wrote %q, each on the test's tmpfs", plan.dirs)
	for _, sh := range termShells {
		t.Run(sh.name, func(t *testing.T) {
			masked := plan.comp[sh.name]
			control := func() string {
				for _, d := range masked {
					mountEmpty(t, d)
				}
				defer func() {
					for _, d := range masked {
						if err := syscall.Unmount(d, 0); err != nil {
							t.Fatalf("umount %s (the control's mask): %v", d, err)
						}
					}
				}()
				return termTab(t, sh)
			}()
			if !offersFile(control) {
				t.Fatalf("control: with %s's completion files hidden (%q), git corral <TAB> did not fall back to the project's files; the screen after the prompt was:\n%s", sh.name, masked, control)
			}
			if shown := listedOf(control); len(shown) > 0 {
				t.Fatalf("control: with %s's completion files hidden (%q), git corral <TAB> still offered %q, so the test cannot show that the install is what completes; the screen after the prompt was:\n%s", sh.name, masked, shown, control)
			}
			t.Logf("control, %s's completion files hidden: git corral <TAB> offers the project's files:\n%s", sh.name, control)
			screen := termTab(t, sh)
			if missing := notListed(screen, termSubcommands...); len(missing) > 0 {
				t.Fatalf("after make install (default prefix), %s did not offer %q for git corral <TAB>; the screen after the prompt was:\n%s", sh.name, missing, screen)
			}
			if offersFile(screen) {
				t.Fatalf("after make install (default prefix), %s offered the project's files for git corral <TAB>, not only the subcommands; the screen after the prompt was:\n%s", sh.name, screen)
			}
			t.Logf("after make install, git corral <TAB> offers the subcommands:\n%s", screen)
		})
	}
}

// mountEmpty mounts an empty tmpfs over dir, mode 0755 like the directories it hides (zsh's
// compinit refuses a world-writable directory on $fpath, tmpfs's default 1777). The mounts
// end with the namespace.
func mountEmpty(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Mount("corral-install-test", dir, "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatalf("mount tmpfs over %s: %v", dir, err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("the tmpfs just mounted over %s is not empty (%d entries, %v)", dir, len(ents), err)
	}
}

func devOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return uint64(st.Dev)
}

// termTab logs the user nobody, with a new empty home, into sh in a fresh tmux server (its
// own socket and configuration) in a git repository holding one file, probe-file, types
// `git corral ` and TAB, and returns what the screen shows after the prompt once the shell
// has listed candidates (the subcommands, or the file).
func termTab(t *testing.T, sh termShell) string {
	t.Helper()
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("the user nobody: %v", err)
	}
	home, proj, tmuxDir := nobodyDir(t, nobody), nobodyDir(t, nobody), nobodyDir(t, nobody)
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init %s: %v\n%s", proj, err, out)
	}
	shell, err := exec.LookPath(sh.path)
	if err != nil {
		t.Fatalf("%s: %v", sh.name, err)
	}
	writeTestFile(t, filepath.Join(proj, termProbeFile), "x\n")
	writeTestFile(t, filepath.Join(tmuxDir, "tmux.conf"), "set -g default-shell "+shell+"\nset -g status off\n")
	if out, err := exec.Command("chown", "-R", nobody.Uid+":"+nobody.Gid, proj).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	env := []string{"HOME=" + home, "USER=nobody", "LOGNAME=nobody", "SHELL=" + shell,
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TERM=xterm-256color", "GIT_CONFIG_NOSYSTEM=1"}
	tmux := func(args ...string) string {
		t.Helper()
		argv := append([]string{"--reuid=" + nobody.Uid, "--regid=" + nobody.Gid, "--clear-groups", "--",
			"tmux", "-f", filepath.Join(tmuxDir, "tmux.conf"), "-S", filepath.Join(tmuxDir, "sock")}, args...)
		cmd := exec.Command("setpriv", argv...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// No command: tmux starts default-shell as a login shell.
	tmux("new-session", "-d", "-x", "200", "-y", "100", "-c", proj)
	defer func() { // before the caller unmounts anything the shell might hold
		cmd := exec.Command("setpriv", "--reuid="+nobody.Uid, "--regid="+nobody.Gid, "--clear-groups", "--",
			"tmux", "-S", filepath.Join(tmuxDir, "sock"), "kill-server")
		cmd.Env = env
		cmd.Run()
	}()
	screen := func() string { return strings.TrimRight(tmux("capture-pane", "-p", "-J", "-S", "-"), "\n ") }
	poll := func(d time.Duration, ok func(string) bool) (string, bool) {
		for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
			s := screen()
			if ok(s) {
				return s, true
			}
			if time.Now().After(end) {
				return s, false
			}
		}
	}
	wait := func(what string, ok func(string) bool) string {
		t.Helper()
		s, done := poll(20*time.Second, ok)
		if !done {
			t.Fatalf("%s: no %s within 20s; the screen was:\n%s", sh.name, what, s)
		}
		return s
	}
	if sh.name == "zsh" {
		wait("zsh-newuser-install menu", func(s string) bool { return strings.Contains(s, "Type one of the keys in parentheses") })
		tmux("send-keys", "2")
	}
	// The shell has read its startup files and runs git corral: CORRAL-READY is printed only
	// by the command (the typed line is in lower case).
	after := func(s string) string {
		if i := strings.LastIndex(s, "CORRAL-READY"); i >= 0 {
			return s[i:]
		}
		return ""
	}
	// A line typed while the shell still starts (zsh's new-user menu on a loaded machine) can
	// be dropped: it is typed again until the shell has run it.
	for try := 1; ; try++ {
		tmux("send-keys", "-l", "git corral version >/dev/null && echo corral-ready | tr a-z A-Z")
		tmux("send-keys", "Enter")
		s, done := poll(10*time.Second, func(s string) bool { return after(s) != "" })
		if done {
			break
		}
		if try == 3 {
			t.Fatalf("%s: no CORRAL-READY from git corral version after typing it %d times; the screen was:\n%s", sh.name, try, s)
		}
	}
	tmux("send-keys", "-l", "git corral ")
	wait("typed line", func(s string) bool { return strings.Contains(after(s), "git corral") })
	for i := 0; i < sh.tabs; i++ {
		tmux("send-keys", "Tab")
	}
	return after(wait("list of candidates", func(s string) bool {
		a := after(s)
		return offersFile(a) || len(notListed(a, termSubcommands...)) == 0
	}))
}

// nobodyDir makes an empty directory that nobody owns, removed at the end of the test.
func nobodyDir(t *testing.T, nobody *user.User) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "corral-newuser-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var uid, gid int
	fmt.Sscan(nobody.Uid, &uid)
	fmt.Sscan(nobody.Gid, &gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}
