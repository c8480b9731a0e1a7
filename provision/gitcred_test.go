package provision

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/boxenv"
	"github.com/git-corral/git-corral/policy"
)

// TestRenderGitCredential: the credential helper script is rendered only with git_tokens, right
// after 10-base, installs the helper byte for byte and names it in /etc/gitconfig; shellcheck
// passes on it.
func TestRenderGitCredential(t *testing.T) {
	for _, mode := range []policy.Network{policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline} {
		opts := testOptions(mode)
		b, err := Render(opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range b.Scripts {
			if s.Name == "15-git-credential.sh" || strings.Contains(s.Body, boxenv.CredentialHelperPath) {
				t.Errorf("%s: %s installs the credential helper without git_tokens", mode, s.Name)
			}
		}
		opts.GitCredentialHelper = true
		if b, err = Render(opts); err != nil {
			t.Fatal(err)
		}
		if len(b.Scripts) < 3 || b.Scripts[2].Name != "15-git-credential.sh" || b.Scripts[2].Mode != ModeSystem {
			t.Fatalf("%s: scripts %v, want 15-git-credential.sh (system) right after 05-box and 10-base", mode, names(b))
		}
		body := b.Scripts[2].Body
		if !strings.Contains(body, "\n"+boxenv.CredentialHelper) || !strings.Contains(body, "\thelper = "+boxenv.CredentialHelperPath+"\n") {
			t.Errorf("%s: the script lacks the helper or the gitconfig line:\n%s", mode, body)
		}
		if _, err := exec.LookPath("shellcheck"); err == nil {
			p := filepath.Join(t.TempDir(), "15-git-credential.sh")
			os.WriteFile(p, []byte(body), 0o644)
			if out, err := exec.Command("shellcheck", "-s", "sh", "-S", "style", p).CombinedOutput(); err != nil {
				t.Errorf("shellcheck: %v\n%s", err, out)
			}
		}
	}
}

func names(b Bundle) []string {
	var n []string
	for _, s := range b.Scripts {
		n = append(n, s.Name)
	}
	return n
}

// TestGitCredentialBoot runs the real 10-base and 15-git-credential scripts as root over a
// hostile starting state (the box user owning the helper's directory with a helper of its own,
// /etc/gitconfig a symlink to a file the box user owns), twice as at two boots. Afterwards the
// helper and the config are root's, and git run by the box user gets the token from the session
// environment for the configured host only; no token reached the guest's disk.
func TestGitCredentialBoot(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	opts := privdropOptions()
	opts.GitCredentialHelper = true
	g := newGuestRoot(t, opts)
	const token = "tok-boot-5f3a9c"
	fill := func(label, input string) string {
		return `echo "` + label + `=$(printf '` + input + `' | runuser -u corral -- env -i HOME=/home/corral PATH=/usr/bin:/bin GIT_TERMINAL_PROMPT=0 ` +
			`CORRAL_GIT_TOKEN_0=` + token + ` CORRAL_GIT_TOKEN_0_HOST=git.example git credential fill 2>/dev/null | grep '^password=' | tr '\n' ' ')"
`
	}
	out, errOut, code := g.run("", prepHostile+`
install -d -o corral -g corral /usr/local/libexec/corral
printf '#!/bin/sh\necho password=stolen\n' >/usr/local/libexec/corral/git-credential-corral
chown corral /usr/local/libexec/corral/git-credential-corral
printf '[credential]\n\thelper = !echo password=planted\n' >/home/corral/evil.gitconfig
chown corral /home/corral/evil.gitconfig
ln -s /home/corral/evil.gitconfig /etc/gitconfig
for i in 1 2; do sh /corral/10-base.sh >/tmp/b.log 2>&1 && sh /corral/15-git-credential.sh >>/tmp/b.log 2>&1 || { cat /tmp/b.log; exit 90; }; done
echo "HELPER=$(stat -c '%U:%G %a' /usr/local/libexec/corral/git-credential-corral)"
echo "DIR=$(stat -c '%U:%G %a' /usr/local/libexec/corral)"
echo "CONFIG=$(stat -c '%F %U:%G %a' /etc/gitconfig)"
echo "EVIL=$(cat /home/corral/evil.gitconfig | tr '\n' ' ')"
echo "HELPERS=$(runuser -u corral -- env -i HOME=/home/corral PATH=/usr/bin:/bin git config --system --get-all credential.helper | tr '\n' ,)"
`+fill("GOOD", `protocol=https\nhost=git.example\n\n`)+
		fill("HTTP", `protocol=http\nhost=git.example\n\n`)+
		fill("OTHER", `protocol=https\nhost=evil.example\n\n`)+`
grep -rl `+token+` /etc /usr/local /home /var/lib /root 2>/dev/null | sed 's/^/ON-DISK /'
`)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	want := []string{
		"HELPER=root:root 755", "DIR=root:root 755", "CONFIG=regular file root:root 644",
		"EVIL=[credential] \thelper = !echo password=planted ", // the symlink's target is untouched
		"HELPERS=," + boxenv.CredentialHelperPath + ",",
		"GOOD=password=" + token + " ", "HTTP=\n", "OTHER=\n",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("want %q in:\n%s", w, out)
		}
	}
	if strings.Contains(out, "ON-DISK") || strings.Contains(out, "stolen") || strings.Contains(out, "planted\n") {
		t.Errorf("a planted helper answered or the token is on the guest's disk:\n%s", out)
	}
}
