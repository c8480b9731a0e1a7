package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitTokenHost is the host TestBoxLifecycle's box has a git token for (policy takes host names
// without a port: https on 443).
const gitTokenHost = "git.corral.test"

// lifecycleConfig is TestBoxLifecycle's trusted per-project configuration.
const lifecycleConfig = `git_tokens = { "` + gitTokenHost + `" = "CORRAL_E2E_GIT_TOKEN" }` + "\n"

// writeProjectConfig writes box's trusted per-project file ($CORRAL_HOME/projects/<box>.toml),
// owned by the test user.
func writeProjectConfig(t *testing.T, box, content string) {
	t.Helper()
	dir := filepath.Join(suite.home, "projects")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, box+".toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dir, p} {
		if err := chown(f); err != nil {
			t.Fatal(err)
		}
	}
}

// credentialScript runs in the guest: who owns the helper and /etc/gitconfig, whether the box
// user can overwrite the helper, which helpers git uses, what git credential fill gets for the
// configured host and for hostile ones, and whether the token is in any guest file. The token
// is never on a command line: grep reads it from its stdin.
const credentialScript = `h=/usr/local/libexec/corral/git-credential-corral
echo "HELPER=$(stat -c '%U:%G %a' "$h")"
echo "CONFIG=$(stat -c '%U:%G %a' /etc/gitconfig)"
echo "HELPERS=$(git config --system --get-all credential.helper | tr '\n' ,)"
(: >>"$h") 2>/dev/null && echo "USER-WRITABLE"
fill() { printf "protocol=%s\nhost=%s\n%s\n" "$1" "$2" "$3" | GIT_TERMINAL_PROMPT=0 git credential fill 2>/dev/null | grep -c '^password=' ; }
echo "GOOD=$(fill https ` + gitTokenHost + ` '')"
echo "HTTP=$(fill http ` + gitTokenHost + ` '')"
echo "OTHER=$(fill https evil.corral.test:8443 '')"
echo "PORT=$(fill https git.corral.test:8443 '')"
echo "SUFFIX=$(fill https git.corral.test.evil.test '')"
echo "USERINFO=$(fill https ` + gitTokenHost + ` 'username=evil')"
offered=$(printf 'protocol=https\nhost=%s\n\n' ` + gitTokenHost + ` | git credential fill 2>/dev/null | sed -n 's/^password=//p')
[ -n "$offered" ] && [ "$offered" = "$(printenv CORRAL_GIT_TOKEN_0)" ] && echo "OFFERED=the token"
printenv CORRAL_GIT_TOKEN_0 | grep -rlsF -f /dev/stdin /etc /usr/local /var/log /var/lib /root /home /tmp /var/tmp 2>/dev/null | sed 's/^/ON-DISK /'
echo done`

// secretsOnBox adds the secrets subtests to TestBoxLifecycle's running box: the git credential
// helper, env_from_host failing closed, no_env_passthrough.
func secretsOnBox(t *testing.T, dir, box, token string) {
	t.Run("git_tokens: the helper is root's and answers only its host over https", func(t *testing.T) {
		scan := watchArgv(t, token)
		r := corral(t, dir, nil, "run", "--", "sh", "-c", credentialScript)
		leaks := scan.stop(t)
		if r.code != 0 || !strings.Contains(r.stdout, "done") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, want := range []string{"HELPER=root:root 755", "CONFIG=root:root 644",
			"HELPERS=,/usr/local/libexec/corral/git-credential-corral,", "GOOD=1", "OFFERED=the token",
			"HTTP=0", "OTHER=0", "PORT=0", "SUFFIX=0", "USERINFO=0"} {
			if !strings.Contains(r.stdout, want+"\n") {
				t.Errorf("guest says %q, want %q", r.stdout, want)
			}
		}
		if strings.Contains(r.stdout, "USER-WRITABLE") || strings.Contains(r.stdout, "ON-DISK") {
			t.Errorf("the box user can replace the helper, or the token is on the guest's disk: %s", r.stdout)
		}
		if hits := grepTree(suite.home, token); len(hits) > 0 {
			t.Errorf("the git token is in files under CORRAL_HOME: %v", hits)
		}
		if len(leaks) > 0 {
			t.Errorf("the git token is on a host argv: %v", leaks)
		}
		var info struct {
			Boundary struct {
				GitTokenHosts []string `json:"gitTokenHosts"`
			} `json:"boundary"`
		}
		ir := corral(t, dir, nil, "info", "--json")
		if err := json.Unmarshal([]byte(ir.stdout), &info); err != nil || strings.Join(info.Boundary.GitTokenHosts, ",") != gitTokenHost {
			t.Errorf("info --json: %v, token hosts %v, want %s", err, info.Boundary.GitTokenHosts, gitTokenHost)
		}
	})

	t.Run("env_from_host with the host variable unset refuses and names it", func(t *testing.T) {
		writeProjectConfig(t, box, lifecycleConfig+`env_from_host = { BOX_DEPLOY = "CORRAL_E2E_UNSET_VAR" }`+"\n")
		defer writeProjectConfig(t, box, lifecycleConfig)
		before := auditCount(t, dir, box, "launch")
		r := corral(t, dir, []string{"BOX_DEPLOY=broader-value"}, "run", "--", "sh", "-c", "echo RAN")
		if r.code != 1 || !strings.Contains(r.stderr, "CORRAL_E2E_UNSET_VAR") || strings.Contains(r.stdout, "RAN") {
			t.Fatalf("exit %d, stdout %q, stderr %q: want exit 1 naming CORRAL_E2E_UNSET_VAR, nothing run", r.code, r.stdout, r.stderr)
		}
		if after := auditCount(t, dir, box, "launch"); after != before {
			t.Errorf("launch records %d -> %d: a refused session was launched", before, after)
		}
	})

	t.Run("no_env_passthrough forwards nothing from the host", func(t *testing.T) {
		show := `echo "AMBIENT=${CORRAL_E2E_AMBIENT:-absent}"; echo "FLAG=${CORRAL_E2E_FLAG:-absent}"; ` +
			`echo "TOKENS=$(env | grep -c '^CORRAL_GIT_TOKEN')"; echo "LITERAL=${CORRAL_E2E_LITERAL:-absent}"`
		host := []string{"CORRAL_E2E_AMBIENT=ambient-value", "CORRAL_E2E_FLAG=flag-value"}
		base := lifecycleConfig + `forward_env = ["CORRAL_E2E_AMBIENT"]` + "\n" + `env = { CORRAL_E2E_LITERAL = "lit" }` + "\n"
		defer writeProjectConfig(t, box, lifecycleConfig)

		writeProjectConfig(t, box, base) // the control: the same layers without no_env_passthrough
		r := corral(t, dir, host, "run", "--env", "CORRAL_E2E_FLAG", "--", "sh", "-c", show)
		if r.code != 0 || !strings.Contains(r.stdout, "AMBIENT=ambient-value\nFLAG=flag-value\nTOKENS=2\nLITERAL=lit\n") {
			t.Fatalf("control: exit %d, stdout %q: want every layer passed", r.code, r.stdout)
		}
		writeProjectConfig(t, box, base+"no_env_passthrough = true\n")
		r = corral(t, dir, host, "run", "--env", "CORRAL_E2E_FLAG", "--", "sh", "-c", show)
		if r.code != 0 || !strings.Contains(r.stdout, "AMBIENT=absent\nFLAG=absent\nTOKENS=0\nLITERAL=lit\n") {
			t.Errorf("no_env_passthrough: exit %d, stdout %q: want nothing from the host, the literal kept", r.code, r.stdout)
		}
		for _, n := range []string{"CORRAL_E2E_AMBIENT", "CORRAL_E2E_FLAG", "git token for " + gitTokenHost} {
			if !strings.Contains(r.stderr, "not passed into the box: "+n) {
				t.Errorf("stderr %q does not say %s was dropped", r.stderr, n)
			}
		}
	})
}

// auditCount counts the audit records of one event for dir's box.
func auditCount(t *testing.T, dir, box, event string) int {
	t.Helper()
	r := corral(t, dir, nil, "audit", "--json", "-n", "0", "--box", box)
	n := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, `"event":"`+event+`"`) {
			n++
		}
	}
	return n
}
