package e2e

// The git push scenario of issue #34, on TestKeysAPIBrokers' broker-mode box: a real smart-HTTP
// git server (git http-backend, receive-pack enabled, behind TLS) on the host's loopback, named
// "localhost:PORT" in git_tokens, which the box reaches only through the broker's git route.
// The token is a host variable of the group (setGroupEnv); the broker child trusts the server's
// certificate through SSL_CERT_FILE, which it inherits from git corral, as it would a forge's
// through the host's roots.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/internal/gittest"
)

// gitPushMarker begins the push token; the guest searches for it (never for the whole token,
// which it must not be given), building it from two halves so that its own argv does not hold it.
const gitPushMarker = "CORRAL-E2E-GITTOKEN-"

// gitPushVar is the host variable git_tokens names for the server.
const gitPushVar = "CORRAL_E2E_PUSH_TOKEN"

// gitPushServer is git http-backend over TLS on 127.0.0.1 with a certificate for localhost. It
// answers 401 to a request without the token as git's basic credential, and logs every request
// with whether it carried an Authorization header and whether that was the token.
type gitPushServer struct {
	*gittest.Server // Root is GIT_PROJECT_ROOT; the repository is gittest.Repo
	token           string
	roots           string // PEM file trusting the certificate, readable by the test user
}

// startGitPushServer starts the server with o/r.git holding main with one commit.
func startGitPushServer(t *testing.T) *gitPushServer {
	t.Helper()
	tail := make([]byte, 12)
	rand.Read(tail)
	s := &gitPushServer{token: gitPushMarker + hex.EncodeToString(tail)}
	cert, pemBytes := gittest.LocalhostCert(t)
	rootsDir, err := os.MkdirTemp(e2eBase, "gitpush-roots-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rootsDir) })
	s.roots = filepath.Join(rootsDir, "roots.pem")
	if err := os.WriteFile(s.roots, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(rootsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.Server = gittest.Start(t, gittest.Basic(s.token), &cert)
	s.Seed(t)
	return s
}

// git runs the host's git on the server's side, hermetically.
func (s *gitPushServer) git(t *testing.T, args ...string) string {
	t.Helper()
	return s.Git(t, args...)
}

// refs are the server repository's refs, one "NAME OBJECT" a line.
func (s *gitPushServer) refs(t *testing.T) string {
	t.Helper()
	return s.git(t, "--git-dir", filepath.Join(s.Root, gittest.Repo), "for-each-ref", "--format=%(refname) %(objectname)")
}

// mark is the length of the server's log, for since.
func (s *gitPushServer) mark() int { return len(s.Log()) }

// since returns the log lines after mark.
func (s *gitPushServer) since(mark int) []string { return s.Log()[mark:] }

// host is the server's git_tokens key.
func (s *gitPushServer) host() string {
	return "localhost:" + strings.TrimPrefix(s.URL, "https://127.0.0.1:")
}

// env is what the group's commands need for the server: the token's variable, and the roots the
// broker child verifies the server with.
func (s *gitPushServer) env() []string {
	return []string{gitPushVar + "=" + s.token, "SSL_CERT_FILE=" + s.roots}
}

// gitPushConfig adds to TestKeysAPIBrokers' configuration the server's git_tokens entry,
// git_push and an egress address entry for the server's loopback port (top-level keys, before
// the route's table).
func gitPushConfig(t *testing.T, route string, s *gitPushServer) string {
	t.Helper()
	port := strings.TrimPrefix(s.host(), "localhost:")
	egress := regexp.MustCompile(`(?m)^egress = \[(.*)\]$`)
	if !egress.MatchString(route) {
		t.Fatalf("the group's configuration has no egress line: %s", route)
	}
	cfg := egress.ReplaceAllString(route, fmt.Sprintf(`egress = [$1, "127.0.0.1:%s", "[::1]:%s"]`, port, port))
	return fmt.Sprintf("git_tokens = { %q = %q }\ngit_push = [\"refs/heads/corral/*\"]\n", s.host(), gitPushVar) + cfg
}

// gitPushClone runs in the box: read the route's policy before anything else, show that the
// host is not reachable without the route, clone, commit, push to corral/x, fetch.
// $1 is the https URL of the repository, $2 the route's authority.
const gitPushClone = `fetch() (
` + apiFetch + `
)
export GIT_AUTHOR_NAME=Box GIT_AUTHOR_EMAIL=box@example.invalid GIT_COMMITTER_NAME=Box GIT_COMMITTER_EMAIL=box@example.invalid GIT_TERMINAL_PROMPT=0
echo "== policy"; fetch "http://$2/.corral/policy" "$2"; echo
echo "== rewrite"; git config --get-regexp '^url\.'
echo "== direct"; GIT_CONFIG_COUNT=0 git ls-remote "$1" 2>&1; echo "EXIT-DIRECT=$?"
w="$HOME/corral-e2e-gitpush"; rm -rf "$w"; mkdir -p "$w" && cd "$w" || exit 3
echo "== clone"; git clone "$1" w 2>&1; echo "EXIT-CLONE=$?"
cd w || exit 4
echo "== push"; git commit -q --allow-empty -m "from the box" && git push origin HEAD:refs/heads/corral/x 2>&1; echo "EXIT-PUSH=$?"
echo "PUSHED=$(git rev-parse HEAD)"
echo "== fetch"; git fetch origin 2>&1; echo "EXIT-FETCH=$?"; echo "FETCHED=$(git rev-parse origin/corral/x)"
echo END`

// gitPushRefused runs in the box, in the clone gitPushClone made: a push to main (a
// fast-forward, refused for its ref), a delete of corral/x, a force push to corral/x, and a
// --mirror push that also carries a new corral/y, each with its output and exit status.
const gitPushRefused = `export GIT_AUTHOR_NAME=Box GIT_AUTHOR_EMAIL=box@example.invalid GIT_COMMITTER_NAME=Box GIT_COMMITTER_EMAIL=box@example.invalid GIT_TERMINAL_PROMPT=0
cd "$HOME/corral-e2e-gitpush/w" || exit 3
echo "== main"; git commit -q --allow-empty -m "to main" && git push origin HEAD:refs/heads/main 2>&1; echo "EXIT=$?"
echo "== delete"; git push origin --delete corral/x 2>&1; echo "EXIT=$?"
echo "== force"; git checkout -q -b rewrite origin/main && git commit -q --allow-empty -m "rewritten" && git push -f origin HEAD:refs/heads/corral/x 2>&1; echo "EXIT=$?"
echo "== mirror"; git branch corral/y && git push --mirror origin 2>&1; echo "EXIT=$?"
echo "== end"`

// gitLeakScript prints where in the guest the push token's marker is: the session's
// environment, every process's argv, the environment of every process the box user may read
// (and how many it could and could not read), and files the box user can read under the
// trees a token could be written to.
const gitLeakScript = `m="CORRAL-E2E-"; m="${m}GITTOKEN-"
pat() { printf '%s\n' "$m"; }
echo "ENV=$(env | grep -cF -f <(pat))"
echo "PROCS=$(ls -d /proc/[0-9]* | wc -l)"
echo "ARGV=$(for f in /proc/[0-9]*/cmdline; do { tr '\0' ' ' <"$f"; } 2>/dev/null; echo; done | grep -cF -f <(pat))"
read=0; unread=0; hits=0; pids=" "
for f in /proc/[0-9]*/environ; do
  if e=$(tr '\0' '\n' 2>/dev/null <"$f"); then
    read=$((read+1))
    if printf '%s\n' "$e" | grep -qF -f <(pat); then hits=$((hits+1)); p=${f#/proc/}; pids="$pids${p%/environ} "; fi
  else unread=$((unread+1)); fi
done
echo "ENVIRON=$hits"; echo "ENVIRON-PIDS=$pids"; echo "ENVIRON-READ=$read"; echo "ENVIRON-UNREADABLE=$unread"
pat | grep -rlsF -D skip -f /dev/stdin /etc /home /run /tmp /var /root /usr/local "$PWD" 2>/dev/null | sed 's/^/ON-DISK /'
echo done`

// section returns the part of out after the line "== name" up to the next "== " line.
func section(out, name string) string {
	_, rest, ok := strings.Cut(out, "== "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n== "); i >= 0 {
		return rest[:i+1]
	}
	return rest
}

// gitPushOnBox runs the scenario on the group's running box (dir, box), whose configuration is
// route: fetch and a push to corral/x work with the token the broker adds; pushes to main, a
// delete, a force push and a mirror push are refused with the reason before the server saw
// any push; the token is in no file, environment or process of the box, with the planted
// marker control.
func gitPushOnBox(t *testing.T, s *gitPushServer, dir, box, route string) {
	writeProjectConfig(t, box, gitPushConfig(t, route, s))
	url := "https://" + s.host() + "/o/r.git"
	routeHost := "localhost.git.corral:" + strings.TrimPrefix(s.host(), "localhost:")
	mainBefore := s.git(t, "--git-dir", filepath.Join(s.Root, gittest.Repo), "rev-parse", "main")

	t.Run("git: the policy is readable, clone, fetch and a push to corral/x work through the broker", func(t *testing.T) {
		mark := s.mark()
		r := corral(t, dir, nil, "run", "--", "bash", "-c", gitPushClone, "clone", url, routeHost)
		if !strings.Contains(r.stdout, "\nEND") {
			t.Fatalf("exit %d: the box script did not finish: %s", r.code, r.stderr)
		}
		pol := section(r.stdout, "policy")
		for _, want := range []string{" 200 ", "push: refs matching refs/heads/corral/* (git_push)", "delete a ref: refused (git_push_delete is off)", "non-fast-forward update: refused"} {
			if !strings.Contains(pol, want) {
				t.Errorf("the policy read in the box lacks %q: %s", want, pol)
			}
		}
		if rw := section(r.stdout, "rewrite"); !strings.Contains(rw, "url.http://"+routeHost+"/.insteadof https://"+s.host()+"/") {
			t.Errorf("the box's git does not rewrite %s to the route %s: %q", s.host(), routeHost, rw)
		}
		// Control of "only through the broker": without the rewrite the same URL is the guest's
		// own localhost (no_proxy), where nothing answers.
		if strings.Contains(r.stdout, "EXIT-DIRECT=0\n") {
			t.Errorf("git reached %s without the route: %s", url, section(r.stdout, "direct"))
		}
		for _, want := range []string{"EXIT-CLONE=0\n", "EXIT-PUSH=0\n", "EXIT-FETCH=0\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("box: want %q: %s", want, r.stdout)
			}
		}
		pushed := regexp.MustCompile(`(?m)^PUSHED=([0-9a-f]{40})$`).FindStringSubmatch(r.stdout)
		if pushed == nil {
			t.Fatalf("the box printed no pushed commit: %s", r.stdout)
		}
		if got := strings.TrimSpace(s.git(t, "--git-dir", filepath.Join(s.Root, gittest.Repo), "rev-parse", "refs/heads/corral/x")); got != pushed[1] {
			t.Errorf("the server's corral/x is %s, the box pushed %s", got, pushed[1])
		}
		if !strings.Contains(r.stdout, "FETCHED="+pushed[1]+"\n") {
			t.Errorf("the box's fetch did not bring corral/x back: %s", r.stdout)
		}
		log := strings.Join(s.since(mark), "\n")
		for _, want := range []string{"GET /o/r.git/info/refs?service=git-upload-pack auth=token", "POST /o/r.git/git-upload-pack auth=token",
			"POST /o/r.git/git-receive-pack auth=token"} {
			if !strings.Contains(log, want) {
				t.Errorf("the server's log lacks %q (the broker adds the token):\n%s", want, log)
			}
		}
		if strings.Contains(log, "auth=none") || strings.Contains(log, "auth=other") {
			t.Errorf("a request reached the server without the token or with another credential:\n%s", log)
		}
	})

	t.Run("git: a push to main, a delete, a force push and a mirror push are refused before the server sees them", func(t *testing.T) {
		refsBefore := s.refs(t)
		mark := s.mark()
		r := corral(t, dir, nil, "run", "--", "bash", "-c", gitPushRefused)
		if !strings.Contains(r.stdout, "== end") {
			t.Fatalf("exit %d: the box script did not finish: %s", r.code, r.stderr)
		}
		allowed := "it may push refs matching refs/heads/corral/* (git_push)"
		for _, c := range []struct{ name, want string }{
			{"main", "remote: corral: refs/heads/main is not a ref this box may push; " + allowed},
			{"delete", "remote: corral: deleting refs/heads/corral/x is refused (git_push_delete is off)"},
			{"force", "remote: corral: refs/heads/corral/x is not a fast-forward the broker can prove (git_push_force is off)"},
			{"mirror", "is not a ref this box may push; " + allowed},
		} {
			out := section(r.stdout, c.name)
			if strings.Contains(out, "EXIT=0\n") || !strings.Contains(out, "EXIT=") {
				t.Errorf("%s: the push did not fail: %s", c.name, out)
			}
			if !strings.Contains(out, c.want) || !strings.Contains(out, "[remote rejected]") {
				t.Errorf("%s: git's output lacks the broker's reason %q: %s", c.name, c.want, out)
			}
		}
		if m := section(r.stdout, "mirror"); !strings.Contains(m, "corral/y") || !strings.Contains(m, "all-or-nothing") {
			t.Errorf("mirror: corral/y, allowed alone, is not reported as not applied: %s", m)
		}
		if after := s.refs(t); after != refsBefore {
			t.Errorf("the server's refs changed:\nbefore:\n%s\nafter:\n%s", refsBefore, after)
		}
		if got := s.git(t, "--git-dir", filepath.Join(s.Root, gittest.Repo), "rev-parse", "main"); got != mainBefore {
			t.Errorf("the server's main moved from %s to %s", mainBefore, got)
		}
		// What reached the server during the four pushes: each push's ref advertisement (a
		// read, forwarded with the token like a fetch), and not one receive-pack request.
		seen := s.since(mark)
		t.Logf("the server's log during the refused pushes:\n%s", strings.Join(seen, "\n"))
		if len(seen) < 4 {
			t.Errorf("the server saw %d requests, want the 4 pushes' ref advertisements: %v", len(seen), seen)
		}
		for _, l := range seen {
			if !strings.HasPrefix(l, "GET /o/r.git/info/refs?service=git-receive-pack ") {
				t.Errorf("the server saw more than the ref advertisement of a refused push: %q", l)
			}
		}
		gitPushEgress(t, dir, s)
	})

	t.Run("git: the push token is in no file, environment or process of the box", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "bash", "-c", gitLeakScript)
		if r.code != 0 || !strings.Contains(r.stdout, "done") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, want := range []string{"ENV=0\n", "ARGV=0\n", "ENVIRON=0\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("guest says %q, want %q", r.stdout, want)
			}
		}
		if strings.Contains(r.stdout, "ENVIRON-READ=0\n") {
			t.Errorf("the probe read no process environment: %s", r.stdout)
		}
		if strings.Contains(r.stdout, "ON-DISK") {
			t.Errorf("the token's marker is in guest files: %s", r.stdout)
		}
		// The guest's root processes' environments are not readable by the box user (no way to
		// root in broker mode): what could put the token there comes from the host, whose
		// side is checked instead: the box's cloud-init data and disks' metadata under
		// CORRAL_HOME, the project mount, and the broker's log.
		for _, root := range []string{suite.home, dir} {
			if hits := grepTree(root, s.token); len(hits) > 0 {
				t.Errorf("the token is in files under %s: %v", root, hits)
			}
		}
		// The control of that walk: the variable's name is in the project's configuration.
		if hits := grepTree(suite.home, gitPushVar); len(hits) == 0 {
			t.Errorf("control: grepTree does not find %s in the project configuration under %s", gitPushVar, suite.home)
		}
	})

	t.Run("git: control: a marker planted in the box is found by the same probe", func(t *testing.T) {
		// The marker goes into the session's environment (--env), an argv, the environment of
		// a process started without the session's (env -i), and a file under /var.
		plant := `m="CORRAL-E2E-"; m="${m}GITTOKEN-"; (exec -a "${m}argv" sleep 120) & sp=$!
env -i "CORRAL_E2E_PLANTED=${m}environ" sleep 120 & ep=$!; echo "PLANTED-PID=$ep"
mkdir -p /var/tmp/corral-plant && printf '%s\n' "${m}file" >/var/tmp/corral-plant/marker; sleep 0.3` + "\n"
		c := corral(t, dir, []string{"CORRAL_E2E_MARKER=" + gitPushMarker + "control"}, "run", "--env", "CORRAL_E2E_MARKER", "--",
			"bash", "-c", plant+gitLeakScript+"\nkill $sp $ep; rm -rf /var/tmp/corral-plant")
		pid := regexp.MustCompile(`(?m)^PLANTED-PID=([0-9]+)$`).FindStringSubmatch(c.stdout)
		pids := regexp.MustCompile(`(?m)^ENVIRON-PIDS=(.*)$`).FindStringSubmatch(c.stdout)
		if pid == nil || pids == nil || !strings.Contains(pids[1], " "+pid[1]+" ") {
			t.Errorf("control: the environ probe does not find the marker in the environment of process %v: %q", pid, c.stdout)
		}
		if !strings.Contains(c.stdout, "ENV=1\n") || strings.Contains(c.stdout, "ARGV=0\n") || !strings.Contains(c.stdout, "ON-DISK /var/tmp/corral-plant/marker") {
			t.Errorf("control: the probe does not see a marker planted in the session's environment, an argv and a file: %q", c.stdout)
		}
	})
}

// gitPushEgress checks the egress log: each push's line names its refs with their verdicts, the
// refused ones deny, and nothing in it holds the token.
func gitPushEgress(t *testing.T, dir string, s *gitPushServer) {
	t.Helper()
	r := corral(t, dir, nil, "egress", "--log", "--json")
	if strings.Contains(r.stderr, s.token) {
		t.Errorf("git corral egress printed the token")
	}
	checkPushLog(t, r.stdout, s.token)
}

// checkPushLog checks egress log lines (JSON, one a line): the allowed push to corral/x and
// refused pushes naming main, corral/x and corral/y, and no token.
func checkPushLog(t *testing.T, lines, token string) {
	t.Helper()
	if strings.Contains(lines, token) {
		t.Errorf("the egress log holds the token")
	}
	denied := map[string]bool{}
	var allowedPush bool
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var e struct {
			Decision string `json:"decision"`
			Path     string `json:"path"`
			Refs     []struct {
				Ref      string `json:"ref"`
				Decision string `json:"decision"`
				Reason   string `json:"reason"`
			} `json:"refs"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || !strings.HasSuffix(e.Path, "/git-receive-pack") {
			continue
		}
		for _, ref := range e.Refs {
			switch {
			case ref.Decision == "deny" && e.Decision == "deny":
				denied[ref.Ref] = true
			case ref.Decision == "allow" && e.Decision == "allow" && ref.Ref == "refs/heads/corral/x":
				allowedPush = true
			}
		}
	}
	for _, ref := range []string{"refs/heads/main", "refs/heads/corral/x", "refs/heads/corral/y"} {
		if !denied[ref] {
			t.Errorf("the egress log has no refused push naming %s: %s", ref, lines)
		}
	}
	if !allowedPush {
		t.Errorf("the egress log does not show the allowed push to refs/heads/corral/x: %s", lines)
	}
}
