package provision

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

func testOptions(mode policy.Network) Options {
	return Options{
		Network:    mode,
		User:       "corral",
		ProjectDir: "/home/dev/my project's repo",
		BrokerPort: 18080,
		Packages:   []string{"jq", "libc6:amd64"},
		Repo: []RepoScript{
			{Path: "scripts/setup.sh", Body: []byte("#!/bin/sh\necho hello\n")},
			{Path: "tools/$(weird) name.sh", Body: []byte("echo 'CORRAL_APPROVED_BYTES'\n")},
		},
	}
}

func TestRenderOrder(t *testing.T) {
	opts := testOptions(policy.NetworkOffline)
	opts.GitShadowScript = "#!/bin/sh\necho shadow\n"
	b, err := Render(opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range b.Scripts {
		names = append(names, s.Name)
		if s.Mode != ModeSystem {
			t.Errorf("%s: mode %q, want system (repository scripts drop to the user themselves)", s.Name, s.Mode)
		}
	}
	want := "05-box.sh 10-base.sh 20-lockdown.sh 25-packages.sh 30-privdrop.sh 40-gitshadow.sh 50-repo-01-setup-sh.sh 50-repo-02-weird-name-sh.sh"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("order:\n got %s\nwant %s", got, want)
	}
}

// TestRenderShellcheck runs shellcheck on every rendered script and on the guard check, in
// every mode.
// TestBrokerPortOnlyIn05Box: the broker port is per box, so it is written by 05-box alone; every
// other product script is byte for byte the same for two ports, which is what lets a box resume
// a golden state built for another box without running the base files and the lockdown again
// (vm/golden_state.go runs only the scripts that differ).
func TestBrokerPortOnlyIn05Box(t *testing.T) {
	render := func(port int) map[string]string {
		o := testOptions(policy.NetworkBroker)
		o.BrokerPort = port
		b, err := Render(o)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, s := range b.Recipe().Scripts {
			m[s.Name] = s.Body
		}
		return m
	}
	a, b := render(40001), render(40002)
	if a["05-box.sh"] == b["05-box.sh"] || !strings.Contains(a["05-box.sh"], "define broker_port = 40001") {
		t.Errorf("05-box.sh does not carry the broker port:\n%s", a["05-box.sh"])
	}
	for name, body := range a {
		if name == "05-box.sh" {
			continue
		}
		if body != b[name] {
			t.Errorf("%s differs between broker ports 40001 and 40002: a golden resume would run it again", name)
		}
		if strings.Contains(body, "40001") {
			t.Errorf("%s names the broker port", name)
		}
	}
	for _, want := range []string{"20-lockdown.sh", "10-base.sh", "25-packages.sh"} {
		if _, ok := a[want]; !ok {
			t.Errorf("the recipe has no %s: the test compares nothing there", want)
		}
	}
}

func TestRenderShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck is not installed (scripts/setup.sh installs it)")
	}
	dir := t.TempDir()
	var files, bashFiles []string
	for _, mode := range []policy.Network{policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline} {
		opts := testOptions(mode)
		opts.GitShadowScript = "#!/bin/sh\nset -eu\necho shadow\n"
		b, err := Render(opts)
		if err != nil {
			t.Fatal(err)
		}
		d, err := prepare(opts)
		if err != nil {
			t.Fatal(err)
		}
		b.Scripts = append(b.Scripts, Script{Name: "guard-check", Body: d.GuardCheck}, Script{Name: "guestagent-ns", Body: d.GuestAgentNS})
		p := filepath.Join(dir, string(mode)+"-session-check")
		if err := os.WriteFile(p, []byte(d.SessionCheck), 0o644); err != nil {
			t.Fatal(err)
		}
		bashFiles = append(bashFiles, p)
		if perl, err := exec.LookPath("perl"); err == nil {
			pl := filepath.Join(dir, string(mode)+"-guardd")
			if err := os.WriteFile(pl, []byte(d.GuardDaemon), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(perl, "-c", pl).CombinedOutput(); err != nil {
				t.Errorf("perl -c guardd (%s): %v\n%s", mode, err, out)
			}
		}
		for _, s := range b.Scripts {
			p := filepath.Join(dir, string(mode)+"-"+s.Name)
			if err := os.WriteFile(p, []byte(s.Body), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
	}
	out, err := exec.Command("shellcheck", append([]string{"-s", "sh", "-S", "style"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
	// The session check is sourced by the box user's login shell, bash.
	out, err = exec.Command("shellcheck", append([]string{"-s", "bash", "-S", "style"}, bashFiles...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck (bash): %v\n%s", err, out)
	}
}

func TestRenderRefuses(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Options)
	}{
		{"newline in project dir", func(o *Options) { o.ProjectDir = "/p\nrm -rf /" }},
		{"NUL in project dir", func(o *Options) { o.ProjectDir = "/p\x00x" }},
		{"relative project dir", func(o *Options) { o.ProjectDir = "p" }},
		{"user with space", func(o *Options) { o.User = "a ALL=(ALL) ALL" }},
		{"user with newline", func(o *Options) { o.User = "a\nb" }},
		{"upper-case user", func(o *Options) { o.User = "Root" }},
		{"package option", func(o *Options) { o.Packages = []string{"-oAPT::Foo=1"} }},
		{"package with space", func(o *Options) { o.Packages = []string{"jq curl"} }},
		{"unknown mode", func(o *Options) { o.Network = "open" }},
		{"broker port 0", func(o *Options) { o.Network = policy.NetworkBroker; o.BrokerPort = 0 }},
		{"broker port too big", func(o *Options) { o.Network = policy.NetworkBroker; o.BrokerPort = 70000 }},
		{"repo path newline", func(o *Options) { o.Repo = []RepoScript{{Path: "a\nb.sh", Body: []byte("x")}} }},
		{"root script offline", func(o *Options) { o.Repo = []RepoScript{{Path: "a.sh", Body: []byte("x"), Root: true}} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions(policy.NetworkOffline)
			c.edit(&o)
			if _, err := Render(o); err == nil {
				t.Fatal("rendered, want an error")
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	good := map[string]string{
		"":            "''",
		"a b":         "'a b'",
		"it's":        `'it'\''s'`,
		"$(x) `y` ;|": "'$(x) `y` ;|'",
	}
	for in, want := range good {
		got, err := ShellQuote("v", in)
		if err != nil || got != want {
			t.Errorf("ShellQuote(%q) = %q, %v; want %q", in, got, err, want)
		}
		// The quoted word must come back as the same value through a real shell.
		out, err := exec.Command("sh", "-c", "printf %s "+got).Output()
		if err != nil || string(out) != in {
			t.Errorf("sh read %q back as %q (%v)", got, out, err)
		}
	}
	for _, bad := range []string{"a\nb", "a\rb", "a\x00b", "\n"} {
		if _, err := ShellQuote("v", bad); !errors.Is(err, ErrUnsafeValue) {
			t.Errorf("ShellQuote(%q) error %v, want ErrUnsafeValue", bad, err)
		}
	}
}

func TestHeredocDelimiter(t *testing.T) {
	content := "line\n"
	h, err := heredoc("/etc/x", "0644", content)
	if err != nil {
		t.Fatal(err)
	}
	delim := "CORRAL_EOF_" + sha256Hex(content)[:16]
	if !strings.HasSuffix(h, "\n"+delim) {
		t.Fatalf("heredoc does not end with its delimiter:\n%s", h)
	}
	if _, err := heredoc("/etc/x", "0644\nrm", content); err == nil {
		t.Error("mode with newline accepted")
	}
	if _, err := heredoc("relative", "0644", content); err == nil {
		t.Error("relative path accepted")
	}
}

// TestSudoTailMatchesSudoers keeps the guard check's expected sudo listing in step with the
// sudoers file it installs (the root tests compare it with sudo's real listing).
func TestSudoTailMatchesSudoers(t *testing.T) {
	d, err := prepare(testOptions(policy.NetworkOffline))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(d.Sudoers, "\n") {
		if _, cmd, ok := strings.Cut(line, "NOPASSWD: "); ok {
			n++
			if !strings.Contains(d.GuardCheck, "    (root) NOPASSWD: "+cmd+"\n") && !strings.Contains(d.GuardCheck, "    (root) NOPASSWD: "+cmd+"'") {
				t.Errorf("guard check's SUDO_TAIL lacks %q", cmd)
			}
		}
	}
	if n != 4 || !strings.Contains(d.Sudoers, "corral ALL=(ALL:ALL) !ALL\n") {
		t.Errorf("sudoers has %d fixed commands, want 4 after a deny-all rule:\n%s", n, d.Sudoers)
	}
}

// TestScriptsDrift: the same configuration renders the same product scripts (no drift on every
// session); git_tokens or packages added, or another package list, are named; the git shadow's
// script and the repository's do not count (they are planned and approved per session).
func TestScriptsDrift(t *testing.T) {
	render := func(f func(*Options)) map[string]string {
		t.Helper()
		o := testOptions(policy.NetworkBroker)
		o.GitShadowScript = "#!/bin/sh\necho shadow\n"
		f(&o)
		b, err := Render(o)
		if err != nil {
			t.Fatal(err)
		}
		return b.ProductScripts()
	}
	base := render(func(*Options) {})
	for _, tc := range []struct {
		name string
		f    func(*Options)
		want string
	}{
		{"same configuration", func(*Options) {}, ""},
		{"another git shadow and repository script", func(o *Options) {
			o.GitShadowScript = "#!/bin/sh\necho other\n"
			o.Repo = o.Repo[:1]
		}, ""},
		{"git_tokens added", func(o *Options) { o.GitCredentialHelper = true }, "+15-git-credential.sh"},
		{"packages removed", func(o *Options) { o.Packages = nil }, "-25-packages.sh"},
		{"another package", func(o *Options) { o.Packages = append(o.Packages, "make") }, "~25-packages.sh"},
	} {
		if got := strings.Join(ScriptsDrift(base, render(tc.f)), " "); got != tc.want {
			t.Errorf("%s: drift %q, want %q", tc.name, got, tc.want)
		}
	}
	if d := ScriptsDrift(nil, base); d != nil {
		t.Errorf("a box without recorded scripts: drift %q, want none", d)
	}
}
