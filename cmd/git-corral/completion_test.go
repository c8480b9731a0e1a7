package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// compProbe is one line typed into a real shell, then TAB, and the candidates the terminal
// must show as whole words below the prompt (or, with onPrompt, the line the prompt must hold).
type compProbe struct {
	name     string
	typed    string
	want     []string
	onPrompt bool
}

// completionProbes are the promises of issue #21 for every shell: the daily commands, the
// network modes, the sub-verbs and the box names (of the fake $CORRAL_HOME the test writes).
var completionProbes = []compProbe{
	{"commands", "git corral ", []string{"start", "shell", "run", "info", "config"}, false},
	{"network modes", "git corral start --network ", []string{"full", "broker", "offline"}, false},
	{"image verbs", "git corral image ", []string{"build", "list", "prune"}, false},
	{"snapshot verbs", "git corral snapshot ", []string{"create", "restore", "delete"}, false},
	{"box names", "git corral --box ", []string{"alpha-1234", "beta-5678"}, false},
	{"flags", "git corral start --", []string{"--network", "--help"}, false},
}

// TestCompletionShells installs git corral into a temporary prefix with make install and
// drives real bash, zsh and fish through tmux: each probe is typed in a fresh shell (so zsh's
// first TAB is tested every time) and the screen must show every candidate. HOME, ZDOTDIR and
// XDG_* point into the test's temporary directory; nothing touches the network.
func TestCompletionShells(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: make install builds the binary again")
	}
	for _, tool := range []string{"make", "tmux", "bash", "zsh", "fish"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by this test and is not installed (scripts/setup.sh installs it): %v", tool, err)
		}
	}
	prefix := installPrefix(t)
	tm := newTmux(t, prefix)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		probes := append([]compProbe{}, completionProbes...)
		if shell != "fish" {
			probes = append(probes, compProbe{"git cor", "git cor", []string{"git corral"}, true})
		}
		for _, p := range probes {
			t.Run(shell+"/"+p.name, func(t *testing.T) {
				screen := tm.complete(t, shell, p)
				for _, w := range p.want {
					if !shows(screen, w, p.onPrompt) {
						t.Errorf("%s: %q<TAB> did not offer %q; the screen was:\n%s", shell, p.typed, w, screen)
					}
				}
			})
		}
	}
}

// installPrefix runs make install into a temporary prefix and returns it.
func installPrefix(t *testing.T) string {
	t.Helper()
	prefix := t.TempDir()
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	cmd := exec.Command("make", "-s", "install", "PREFIX="+prefix)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	return prefix
}

// tmuxServer is one private tmux server (its own socket in a temporary directory) whose shells
// see the installed prefix and a hermetic HOME.
type tmuxServer struct {
	env  []string
	home string
	n    int
}

func newTmux(t *testing.T, prefix string) *tmuxServer {
	t.Helper()
	home := t.TempDir()
	corral := filepath.Join(home, "corral")
	for _, box := range []string{"alpha-1234", "beta-5678"} {
		writeTestFile(t, filepath.Join(corral, "boxes", box+".json"), "{}\n")
	}
	writeTestFile(t, filepath.Join(home, ".bashrc"), "source /usr/share/bash-completion/bash_completion\n"+
		"bind 'set show-all-if-ambiguous on'\nbind 'set bell-style none'\nPS1='READY$ '\n")
	writeTestFile(t, filepath.Join(home, ".zshrc"), "fpath=("+filepath.Join(prefix, "share", "zsh", "site-functions")+
		" $fpath)\nautoload -Uz compinit\ncompinit -u -d "+filepath.Join(home, ".zcompdump")+"\nunsetopt beep\nPS1='READY%% '\n")
	writeTestFile(t, filepath.Join(home, ".config", "fish", "config.fish"),
		"set -g fish_greeting\nfunction fish_prompt; echo -n 'READY> '; end\nset -g fish_autosuggestion_enabled 0\n")
	tm := &tmuxServer{home: home, env: []string{
		"PATH=" + filepath.Join(prefix, "bin") + ":" + os.Getenv("PATH"),
		"HOME=" + home, "ZDOTDIR=" + home, "TERM=xterm-256color", "LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_RUNTIME_DIR=" + home,
		"XDG_DATA_DIRS=" + filepath.Join(prefix, "share") + ":/usr/share",
		"TMUX_TMPDIR=" + home, "CORRAL_HOME=" + corral,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
	}}
	// An idle session keeps the server up between probes (it exits with its last session).
	if err := tm.run("new-session", "-d", "-s", "keep", "cat"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.run("kill-server") })
	return tm
}

// run runs one tmux command against the private server.
func (tm *tmuxServer) run(args ...string) error {
	cmd := exec.Command("tmux", append([]string{"-L", "corral-completion", "-f", "/dev/null"}, args...)...)
	cmd.Env = tm.env
	cmd.Dir = tm.home
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// capture returns what the session's screen shows.
func (tm *tmuxServer) capture(session string) string {
	cmd := exec.Command("tmux", "-L", "corral-completion", "capture-pane", "-p", "-t", session)
	cmd.Env = tm.env
	out, _ := cmd.Output()
	return strings.TrimRight(string(out), "\n ")
}

// complete starts shell in a new session, waits for its prompt, types typed and TAB, and
// returns the screen once it shows every wanted string (or after the time limit).
func (tm *tmuxServer) complete(t *testing.T, shell string, p compProbe) string {
	t.Helper()
	tm.n++
	session := fmt.Sprintf("s%d", tm.n)
	argv := map[string][]string{"bash": {"bash", "--noprofile", "--rcfile", filepath.Join(tm.home, ".bashrc"), "-i"}, "zsh": {"zsh", "-i"}, "fish": {"fish", "-i"}}[shell]
	if err := tm.run(append([]string{"new-session", "-d", "-s", session, "-x", "200", "-y", "100"}, argv...)...); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tm.run("kill-session", "-t", session) }()
	if !tm.waitFor(session, "READY", 15*time.Second) {
		t.Fatalf("%s showed no prompt; the screen was:\n%s", shell, tm.capture(session))
	}
	if err := tm.run("send-keys", "-t", session, "-l", p.typed); err != nil {
		t.Fatal(err)
	}
	if err := tm.run("send-keys", "-t", session, "Tab"); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(10 * time.Second)
	for {
		screen := tm.capture(session)
		if time.Now().After(end) || showsAll(screen, p) {
			return screen
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// showsAll says whether the screen shows every candidate of p.
func showsAll(screen string, p compProbe) bool {
	for _, w := range p.want {
		if !shows(screen, w, p.onPrompt) {
			return false
		}
	}
	return true
}

// shows says whether w is on the screen: as a whole word starting a line or a column on a line
// that is not a prompt (a candidate, not the typed text), or, with onPrompt, at the end of the last prompt line.
func shows(screen, w string, onPrompt bool) bool {
	lines := strings.Split(screen, "\n")
	if onPrompt {
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(lines[i], "READY") {
				return strings.HasSuffix(strings.TrimSpace(lines[i]), w)
			}
		}
		return false
	}
	// A candidate starts a line or a column (two spaces or more before it): a word inside
	// another candidate's description ("(what start runs)") has one.
	word := regexp.MustCompile(`(^\s*|\s{2,})` + regexp.QuoteMeta(w) + `(\s|$)`)
	for _, l := range lines {
		if !strings.Contains(l, "READY") && word.MatchString(l) {
			return true
		}
	}
	return false
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls the screen until it shows want.
func (tm *tmuxServer) waitFor(session, want string, limit time.Duration) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(tm.capture(session), want) {
			return true
		}
	}
	return false
}

// TestCompletionValueKinds keeps valueKinds in step with the command table: every flag it names
// (but the global -C) is a value flag of some command, so a renamed flag cannot silently lose its
// completion, and every such flag gets its kind in the model rather than being free text.
func TestCompletionValueKinds(t *testing.T) {
	got := map[string]string{}
	for _, c := range compModel() {
		for _, f := range c.flags {
			if f.value != valueNone {
				got[f.name] = f.value
			}
		}
	}
	for name, kind := range valueKinds {
		if name == "C" {
			continue
		}
		if got[name] != kind {
			t.Errorf("valueKinds names --%s as %q, but the command table gives it %q (a renamed or boolean flag?)", name, kind, got[name])
		}
	}
	if got["help"] != "" || got["json"] != "" {
		t.Errorf("a boolean flag was modelled as taking a value: help %q, json %q", got["help"], got["json"])
	}
}
