package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/report"
)

// reportEnv is a hermetic home with a scripted repository whose box has one session in the
// audit log (written by audit.Log.Append).
type reportEnv struct {
	t           *testing.T
	root, repo  string
	env         map[string]string
	box         string
	sessionID   string
	key, signer string
}

func newReportEnv(t *testing.T) *reportEnv {
	t.Helper()
	root := t.TempDir()
	e := &reportEnv{t: t, root: root, repo: filepath.Join(root, "proj")}
	e.env = map[string]string{"HOME": filepath.Join(root, "home"), home.Env: filepath.Join(root, "home", ".corral"), "TERM": "dumb"}
	for k, v := range map[string]string{"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": filepath.Join(root, "gitconfig"),
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
		"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"} {
		t.Setenv(k, v)
	}
	e.run("git", "init", "-q", "-b", "main", e.repo)
	e.run("git", "-C", e.repo, "commit", "-q", "--allow-empty", "-m", "init")
	real, err := filepath.EvalSymlinks(e.repo)
	if err != nil {
		t.Fatal(err)
	}
	e.box = project.BoxName(real)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	lg := &audit.Log{Path: home.Home{Dir: e.env[home.Env]}.SessionsLog()}
	zero := 0
	for _, r := range []audit.Record{
		{Time: start, Event: audit.EventStart, Box: e.box, PID: 42, Detail: "git corral run"},
		{Time: start.Add(time.Second), Event: audit.EventLaunch, Box: e.box, PID: 42, Argv: []string{"make", "TOKEN=hunter2"}},
		{Time: start.Add(9 * time.Second), Event: audit.EventExit, Box: e.box, PID: 42, ExitCode: &zero},
	} {
		if err := lg.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	e.sessionID = report.SessionID(audit.Record{Time: start, PID: 42})
	e.key = filepath.Join(root, "id_ed25519")
	e.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "r", "-f", e.key)
	pub, err := os.ReadFile(e.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	e.signer = filepath.Join(root, "allowed_signers")
	if err := os.WriteFile(e.signer, []byte(`r@example.com namespaces="git-corral-report" `+string(pub)), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *reportEnv) run(prog string, args ...string) string {
	e.t.Helper()
	out, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %s: %v: %s", prog, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// corral runs git corral -C repo ARGS and returns its exit code and streams.
func (e *reportEnv) corral(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(k string) string { return e.env[k] }}
	code := a.main(context.Background(), append([]string{"-C", e.repo}, args...))
	return code, out.String(), errb.String()
}

// TestReportCommand: report writes the last session's record (names, not the argv), --sign
// signs it so that the man page's ssh-keygen commands accept it, and --verify checks it; one
// changed byte fails --verify naming the section, and ssh-keygen.
func TestReportCommand(t *testing.T) {
	e := newReportEnv(t)
	code, out, stderr := e.corral("report")
	if code != 0 {
		t.Fatalf("report exited %d: %s", code, stderr)
	}
	c, err := report.Check([]byte(out))
	if err != nil || c.Record.Sections.Record.Session != e.sessionID || c.Record.Sections.Sessions[0].Commands[0].Name != "make" {
		t.Fatalf("report: %v; record %+v", err, c)
	}
	if strings.Contains(out, "hunter2") {
		t.Fatalf("the record repeats an argument of the command")
	}
	if c.Record.Sections.Diff.Verdict != "unavailable" || !strings.Contains(c.Record.Sections.Diff.Unavailable, "no session base") {
		t.Fatalf("diff = %+v, want unavailable for want of a base", c.Record.Sections.Diff)
	}
	code, signed, stderr := e.corral("report", "--sign", e.key)
	if code != 0 || !strings.Contains(signed, "\n-----BEGIN SSH SIGNATURE-----\n") {
		t.Fatalf("report --sign exited %d: %s", code, stderr)
	}
	file := filepath.Join(e.root, "report")
	if err := os.WriteFile(file, []byte(signed), 0o600); err != nil {
		t.Fatal(err)
	}
	// Control: the file as written verifies, with git corral and with the man page's commands.
	code, out, stderr = e.corral("report", "--verify", file, "--allowed-signers", e.signer)
	if code != 0 || !strings.Contains(out, "signature: good, by ssh-ed25519 SHA256:") || !strings.Contains(out, "as r@example.com") {
		t.Fatalf("report --verify exited %d: %s%s", code, out, stderr)
	}
	if err := manPageVerify(e, file); err != nil {
		t.Fatalf("the man page's ssh-keygen commands refuse the signed report: %v", err)
	}
	// One byte: the session's exit status 0 becomes 1.
	bad := strings.Replace(signed, `"exitCode": 0`, `"exitCode": 1`, 1)
	if bad == signed {
		t.Fatal("the record has no exitCode 0 to change")
	}
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = e.corral("report", "--verify", file, "--allowed-signers", e.signer)
	if code != 1 || !strings.Contains(stderr, `report section "sessions"`) {
		t.Fatalf("report --verify of a changed file exited %d: %s", code, stderr)
	}
	if err := manPageVerify(e, file); err == nil {
		t.Fatal("ssh-keygen accepted the changed report")
	}
	// Unsigned: the hashes hold, and a warning says who made it is unknown.
	code, out, stderr = e.corral("report", "--session", e.sessionID)
	if code != 0 {
		t.Fatalf("report --session exited %d: %s", code, stderr)
	}
	os.WriteFile(file, []byte(out), 0o600)
	if code, _, stderr = e.corral("report", "--verify", file); code != 0 || !strings.Contains(stderr, "is not signed") {
		t.Fatalf("report --verify of an unsigned file exited %d: %s", code, stderr)
	}
	if code, _, stderr = e.corral("report", "--verify", file, "--allowed-signers", e.signer); code != 1 || !strings.Contains(stderr, `"signature"`) {
		t.Fatalf("report --verify --allowed-signers of an unsigned file exited %d: %s", code, stderr)
	}
}

func manPageVerify(e *reportEnv, file string) error {
	script := `sed '/^-----BEGIN SSH SIGNATURE-----$/,$d' "$1" > "$1.json" &&
sed -n '/^-----BEGIN SSH SIGNATURE-----$/,$p' "$1" > "$1.sig" &&
ssh-keygen -Y verify -f "$2" -I r@example.com -n git-corral-report -s "$1.sig" < "$1.json"`
	out, err := exec.Command("sh", "-c", script, "verify", file, e.signer).CombinedOutput()
	if err != nil {
		return &exec.Error{Name: string(out), Err: err}
	}
	return nil
}

// TestReportRefusals: a passphrase key is refused with what to do and nothing on stdout
// (control: the same command with a plain key succeeds, in TestReportCommand); an unknown
// session names the last; flags that do not go together are usage errors.
func TestReportRefusals(t *testing.T) {
	e := newReportEnv(t)
	locked := filepath.Join(e.root, "locked")
	e.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "correct horse", "-C", "r", "-f", locked)
	code, out, stderr := e.corral("report", "--sign", locked)
	if code != 1 || out != "" || !strings.Contains(stderr, "protected by a passphrase") || !strings.Contains(stderr, "corral: hint: start ssh-agent, 'ssh-add "+locked) {
		t.Fatalf("report --sign (passphrase key) exited %d, stdout %q: %s", code, out, stderr)
	}
	code, _, stderr = e.corral("report", "--session", "20990101T000000Z-1")
	if code != 1 || !strings.Contains(stderr, e.sessionID) || !strings.Contains(stderr, "git corral audit") {
		t.Fatalf("report --session (unknown) exited %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"report", "--verify", "x", "--sign", e.key},
		{"report", "--allowed-signers", e.signer},
		{"report", "--all", "--session", e.sessionID},
		{"report", "extra"},
	} {
		if code, _, stderr := e.corral(args...); code != exitUsage {
			t.Errorf("%v exited %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
}
