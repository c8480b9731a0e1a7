package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/git-corral/git-corral/audit"
)

// preflightRepo makes a repository and a CORRAL_HOME whose global (trusted) config is cfg, in
// a hermetic environment with no Lima to find.
func preflightRepo(t *testing.T, cfg string) (dir, corralHome string) {
	t.Helper()
	tmp := t.TempDir()
	dir, corralHome = filepath.Join(tmp, "repo"), filepath.Join(tmp, "corral")
	for k, v := range map[string]string{"HOME": tmp, "CORRAL_HOME": corralHome, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL": "/dev/null", "CORRAL_LIMACTL": "", "CORRAL_LIMA_PREFIX": filepath.Join(tmp, "no-lima"),
		"PATH": "/usr/bin:/bin"} {
		t.Setenv(k, v)
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if err := os.MkdirAll(corralHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corralHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, corralHome
}

// corralIn runs git corral in-process and returns its exit code and stderr.
func corralIn(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: os.Getenv}
	code := a.main(context.Background(), args)
	t.Logf("git corral %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, errb.String()
}

// TestPreflightEnvFromHostUnset: env_from_host naming an unset host variable refuses start, run
// and shell before any box is looked for, naming the variable.
func TestPreflightEnvFromHostUnset(t *testing.T) {
	dir, corralHome := preflightRepo(t, "env_from_host = { BOX_TOKEN = \"CORRAL_TEST_UNSET_HOST_VAR\" }\n")
	os.Unsetenv("CORRAL_TEST_UNSET_HOST_VAR")
	t.Setenv("BOX_TOKEN", "a broader token that must not slip in")
	for _, args := range [][]string{{"run", "--yes", "--", "true"}, {"start", "--yes"}, {"shell", "--yes"}} {
		code, stderr := corralIn(t, append([]string{"-C", dir}, args...)...)
		if code != 1 || !strings.Contains(stderr, "CORRAL_TEST_UNSET_HOST_VAR") || !strings.Contains(stderr, "set the host variable") {
			t.Errorf("%v: exit %d, stderr %q: want exit 1 naming the unset variable, with the hint", args, code, stderr)
		}
		if strings.Contains(stderr, "limactl") || strings.Contains(stderr, "as root") || strings.Contains(stderr, "broader") {
			t.Errorf("%v: got past the preflight or showed a value: %q", args, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(corralHome, "logs", "sessions.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused session left an audit record: %v", err)
	}
}

// TestPreflightFullDiskRefuses mounts a tiny tmpfs over CORRAL_HOME/logs and fills it: start and
// run refuse with exit 1, an error naming the log file and the cause, and a hint, before any box
// is looked for; the log holds no partial line. With space again, the same command gets past
// the preflight (to finding Lima) and the log holds its start record, with names only.
func TestPreflightFullDiskRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs as a full disk; CI runs as root")
	}
	dir, corralHome := preflightRepo(t, "env = { MODE = \"ci\" }\nforward_env = [\"CORRAL_TEST_FWD\"]\n")
	t.Setenv("CORRAL_TEST_FWD", "fwd-secret-value")
	logs := filepath.Join(corralHome, "logs")
	os.MkdirAll(logs, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", logs).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", logs).Run() })
	log := filepath.Join(logs, "sessions.jsonl")
	l := &audit.Log{Path: log}
	if err := l.Append(context.Background(), audit.Record{Event: audit.EventStop, Box: "earlier"}); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(logs, "filler")
	fill(t, filler)
	// The log's last page may still have room: fill it with records until the disk says no.
	kept := 1
	for ; kept < 100; kept++ {
		if err := l.Append(context.Background(), audit.Record{Event: audit.EventStop, Detail: strings.Repeat("f", 300)}); err != nil {
			break
		}
	}

	for _, args := range [][]string{{"run", "--yes", "--", "true"}, {"start", "--yes"}} {
		code, stderr := corralIn(t, append([]string{"-C", dir}, args...)...)
		for _, want := range []string{"refusing to start unaudited", logs + "/", "no space left on device", "free space for", "nothing was booted"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr lacks %q", args, want)
			}
		}
		if code != 1 || strings.Contains(stderr, "limactl") || strings.Contains(stderr, "as root") {
			t.Errorf("%v: exit %d: want 1, refused before any box is looked for", args, code)
		}
	}
	res, err := audit.Read(log, audit.Filter{})
	if err != nil || res.Bad != 0 || len(res.Records) != kept {
		t.Fatalf("after the refusals: %d records, %d bad, %v; want the %d earlier records", len(res.Records), res.Bad, err, kept)
	}
	if b, _ := os.ReadFile(log); len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("the log ends in a partial line: %q", b)
	}

	os.Remove(filler)
	code, stderr := corralIn(t, "-C", dir, "run", "--yes", "--", "true")
	if code == 0 || strings.Contains(stderr, "unaudited") {
		t.Fatalf("with space: exit %d %q: want past the preflight (and then no Lima here)", code, stderr)
	}
	res, _ = audit.Read(log, audit.Filter{})
	last := res.Records[len(res.Records)-1]
	if last.Event != audit.EventStart || strings.Join(last.EnvNames, ",") != "CORRAL_TEST_FWD,MODE" || last.Detail != "git corral run" {
		t.Errorf("start record %+v", last)
	}
	if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("fwd-secret-value")) {
		t.Error("a value reached the audit log")
	}
}

// fill writes to path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			return
		}
	}
}

// TestPreflightSSHAgent: ssh_agent without a host agent refuses before any box is looked for;
// with one, the start record says the agent is forwarded, and a session prints one warning line
// naming the box.
func TestPreflightSSHAgent(t *testing.T) {
	dir, corralHome := preflightRepo(t, "ssh_agent = true\n")
	os.Unsetenv("SSH_AUTH_SOCK")
	code, stderr := corralIn(t, "-C", dir, "run", "--yes", "--", "true")
	if code != 1 || !strings.Contains(stderr, "SSH_AUTH_SOCK is not") || strings.Contains(stderr, "limactl") {
		t.Errorf("ssh_agent without an agent: exit %d %q, want a refusal before Lima is looked for", code, stderr)
	}
	t.Setenv("SSH_AUTH_SOCK", filepath.Join(t.TempDir(), "agent.sock"))
	if code, stderr = corralIn(t, "-C", dir, "run", "--yes", "--", "true"); strings.Contains(stderr, "SSH_AUTH_SOCK") {
		t.Errorf("with an agent: exit %d %q, want past the preflight", code, stderr)
	}
	res, err := audit.Read(filepath.Join(corralHome, "logs", "sessions.jsonl"), audit.Filter{})
	if err != nil || len(res.Records) != 1 || !res.Records[0].SSHAgent {
		t.Errorf("audit records %+v, %v: want one start record with sshAgent", res.Records, err)
	}
	if line := formatRecord(res.Records[0]); !strings.Contains(line, "ssh-agent=forwarded") {
		t.Errorf("git corral audit shows %q, want ssh-agent=forwarded", line)
	}

}
