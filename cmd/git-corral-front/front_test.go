package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// boxPackages are what the front must not link: Lima, go-git and git corral's box packages
// (their initialisers and size are what the front saves, docs/benchmarks-history.md).
var boxPackages = regexp.MustCompile(`^github\.com/(lima-vm/|go-git/|mikefarah/|git-corral/git-corral/(vm|session|provision)$)`)

// TestFrontLinksNoBox fails when the front, or its flow in package front, links Lima, go-git,
// yq, vm, session or provision again.
func TestFrontLinksNoBox(t *testing.T) {
	for _, pkg := range []string{".", "../../sandbox/front", "../../sandbox/dispatch"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if boxPackages.MatchString(dep) {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}

// TestFrontBuildsNoSeccompFilter fails when the front links go-seccomp-bpf on amd64 again: its
// initialiser builds every architecture's system call table (165 KB in 44 allocations, about
// a millisecond) at each start, and the filter it assembled was the same bytes at every run,
// so on amd64 the program is built in (sandbox/seccomp_program_linux_amd64.go, checked by
// sandbox's TestSeccompPrecompiled).
func TestFrontBuildsNoSeccompFilter(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/git-corral/git-corral/sandbox") {
		t.Fatal("control: the front does not link package sandbox, whose filter this test is about")
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/elastic/go-seccomp-bpf") {
			t.Errorf("the front links %s on linux/amd64", dep)
		}
	}
}

// networkPackages are what the front must not link for the network: net/http, TLS and x509 (about
// 5 MB of the front and 3 ms of its every start here, issue #30 point 6), and the packages
// of git corral's that bring them, the broker (sandbox/netbroker: a run whose manifest grants
// network access goes to the full binary) and the login store (policy checks agent_login
// through login/loginname); and x/net's httpguts and IDNA tables (policy checks header names
// through internal/httpheader).
var networkPackages = regexp.MustCompile(`^(net/http|crypto/tls|crypto/x509|golang\.org/x/net/(idna|http/httpguts)|github\.com/git-corral/git-corral/(broker|login|sandbox/netbroker))$`)

// TestFrontLinksNoNetwork fails when the front links net/http, TLS, x509, x/net, the broker or
// the login store again, as the Makefile builds it (without cgo). The control: it still links
// package sandbox and policy, which it runs, and net, which the sandbox's inside steps use.
func TestFrontLinksNoNetwork(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"github.com/git-corral/git-corral/sandbox", "github.com/git-corral/git-corral/policy", "net"} {
		if !slices.Contains(deps, want) {
			t.Errorf("control: the front does not link %s", want)
		}
	}
	for _, dep := range deps {
		if networkPackages.MatchString(dep) {
			t.Errorf("the front links %s", dep)
		}
	}
}

// buildAll builds git corral's binaries into dir as 'make build' does, and returns dir.
func buildAll(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("make", "-s", "build", "BINDIR="+dir)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	return dir
}

type result struct {
	stdout, stderr string
	code           int
}

// TestFrontAnswersAsFull runs the same command lines through the front as make build leaves it
// (bin/git-corral, the full binary and the helper beside it) and through the full binary
// started itself, as git-corral was before the front, and wants the same stdout, stderr and
// exit code: sandbox runs the front answers (a status, a grant, a refusal, a missing -C
// directory, a bad or missing manifest, a repository whose [sandbox] table widens, -C joined
// as git joins it) and command lines it hands to the full binary (help, a usage error, --box,
// an unknown command or flag, sandbox with no command, a manifest that grants network access
// and one whose network.allow and another key are wrong).
func TestFrontAnswersAsFull(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap is not installed: run scripts/setup.sh")
	}
	root := t.TempDir()
	bin := buildAll(t, filepath.Join(root, "bin"))
	home := filepath.Join(root, "home")
	repo := filepath.Join(root, "repo")
	os.MkdirAll(filepath.Join(home, "out"), 0o755)
	os.WriteFile(filepath.Join(root, "write.toml"), []byte("[fs]\nwrite = [\"~/out\"]\n"), 0o644)
	os.WriteFile(filepath.Join(root, "bad.toml"), []byte("[fs]\nnope = true\n"), 0o644)
	os.WriteFile(filepath.Join(root, "net.toml"), []byte("[network]\nallow = [\"127.0.0.1:9\"]\n"), 0o644)
	os.WriteFile(filepath.Join(root, "badnet.toml"), []byte("[network]\nallow = [\"http://x/\"]\n[fs]\nnope = true\n"), 0o644)
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(repo, ".corral.toml"), []byte("[sandbox]\nfs.write = [\"~/\"]\n"), 0o644)
	env := append(os.Environ(), "HOME="+home, "CORRAL_HOME="+filepath.Join(home, ".corral"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+filepath.Join(home, ".gitconfig"), "NO_COLOR=", "TERM=dumb")
	run := func(exe string, args []string) result {
		cmd := exec.Command(exe, args...)
		cmd.Env, cmd.Dir = env, root
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
	}
	for _, args := range [][]string{
		{"sandbox", "--", "sh", "-c", "echo out; echo err >&2; exit 3"},
		{"sandbox", "--manifest", filepath.Join(root, "write.toml"), "--", "sh", "-c", "echo ok > " + home + "/out/f && cat " + home + "/out/f"},
		{"sandbox", "--", "sh", "-c", "echo no > " + home + "/out/g"},
		{"-C", filepath.Join(root, "missing"), "sandbox", "--", "true"},
		{"sandbox", "--manifest", filepath.Join(root, "bad.toml"), "--", "true"},
		{"sandbox", "--manifest", filepath.Join(root, "missing.toml"), "--", "true"},
		{"-C", repo, "sandbox", "--manifest", filepath.Join(root, "write.toml"), "--", "true"},
		{"-C", root, "-Crepo", "sandbox", "--", "true"},
		{"sandbox", "--manifest", filepath.Join(root, "net.toml"), "--", "sh", "-c", "echo net; exit 5"},
		{"sandbox", "--manifest", filepath.Join(root, "badnet.toml"), "--", "true"},
		{"sandbox", "-h"},
		{"sandbox"},
		{"sandbox", "--nope", "--", "true"},
		{"--box", "x", "sandbox", "--", "true"},
		{"nosuch"},
		{"--nope"},
		{"help"},
		{"completion", "bash"},
		{},
	} {
		front, full := run(filepath.Join(bin, "git-corral"), args), run(filepath.Join(bin, "git-corral-full"), args)
		if front != full {
			t.Errorf("git corral %q\nthe front:       %+v\nthe full binary: %+v", args, front, full)
		}
	}
}

// TestFrontWithoutFull: without the full binary beside it, the front still runs a sandbox, and
// every other command line, and a sandbox whose manifest grants network access (its broker is
// in the full binary), fails with status 1, naming where it looked and what to do.
func TestFrontWithoutFull(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap is not installed: run scripts/setup.sh")
	}
	bin := buildAll(t, filepath.Join(t.TempDir(), "bin"))
	if err := os.Remove(filepath.Join(bin, "git-corral-full")); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result {
		cmd := exec.Command(filepath.Join(bin, "git-corral"), args...)
		cmd.Env = append(os.Environ(), "CORRAL_HOME="+filepath.Join(bin, "..", "corral"), "NO_COLOR=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
	}
	if r := run("sandbox", "--", "sh", "-c", "echo in; exit 4"); r.stdout != "in\n" || r.code != 4 {
		t.Errorf("sandbox without the full binary: %+v, want \"in\" and status 4", r)
	}
	net := filepath.Join(bin, "net.toml")
	os.WriteFile(net, []byte("[network]\nallow = [\"127.0.0.1:9\"]\n"), 0o644)
	r := run("sandbox", "--manifest", net, "--", "true")
	want := "corral: error: the full git corral binary git-corral-full is installed neither in " + filepath.Join(filepath.Dir(bin), "lib", "git-corral") + " nor beside " + filepath.Join(bin, "git-corral") + "\n" +
		"corral: hint: install git corral again ('make install'); a manifest without [network] runs without it\n"
	if r.code != 1 || r.stderr != want || r.stdout != "" {
		t.Errorf("sandbox with a network grant without the full binary: %+v\nwant stderr %q", r, want)
	}
	r = run("status")
	want = "corral: error: the full git corral binary git-corral-full is installed neither in " + filepath.Join(filepath.Dir(bin), "lib", "git-corral") + " nor beside " + filepath.Join(bin, "git-corral") + "\n" +
		"corral: hint: install git corral again ('make install'); 'git corral sandbox -- CMD' alone works without it\n"
	if r.code != 1 || r.stderr != want || r.stdout != "" {
		t.Errorf("status without the full binary: %+v\nwant stderr %q", r, want)
	}
}

// hostSide are packages of the light tier's host side, which the front links for a run and a
// box command must not wait for.
var hostSide = regexp.MustCompile(`^github\.com/(BurntSushi/|elastic/|vektah/|pelletier/|git-corral/git-corral/(sandbox|broker|policy|project)$)`)

// TestHandoffBeforeInitialisers proves the front hands a box command to the full binary before
// the host side's initialisers run: with a stand-in full binary that prints its arguments, the
// initialiser trace of `git corral status` has none of hostSide's packages and the stand-in got
// the arguments unchanged. The control: `git corral sandbox --stage nope`, which the front keeps,
// runs them (so the trace would show them if they ran).
func TestHandoffBeforeInitialisers(t *testing.T) {
	dir := t.TempDir()
	front := filepath.Join(dir, "git-corral")
	build := exec.Command("go", "build", "-o", front, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "git-corral-full"), []byte("#!/bin/sh\necho full: \"$@\"\n"), 0o755)
	run := func(args ...string) (string, []string) {
		cmd := exec.Command(front, args...)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		var host []string
		for _, l := range strings.Split(stderr.String(), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "init" && hostSide.MatchString(f[1]) {
				host = append(host, f[1])
			}
		}
		return stdout.String(), host
	}
	out, host := run("-C", dir, "status", "--json", "a b")
	if out != "full: -C "+dir+" status --json a b\n" {
		t.Errorf("git corral status did not reach the full binary with its arguments: stdout %q", out)
	}
	if len(host) > 0 {
		t.Errorf("the front ran %d initialisers of the light tier's host side before the full binary, first %s", len(host), host[0])
	}
	out, host = run("sandbox", "--stage", "nope")
	if strings.Contains(out, "full:") || len(host) == 0 {
		t.Errorf("control: sandbox --stage went to the full binary (%q) or ran no host-side initialiser (%d)", out, len(host))
	}
}

// TestFrontHandsNetworkToFull proves the front hands a run whose manifest grants network access
// to the full binary, which links the broker, with its arguments unchanged and before anything
// ran (no line in the sandbox log); a manifest whose network.allow is empty, the control, runs
// in the front itself.
func TestFrontHandsNetworkToFull(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap is not installed: run scripts/setup.sh")
	}
	bin := buildAll(t, filepath.Join(t.TempDir(), "bin"))
	os.WriteFile(filepath.Join(bin, "git-corral-full"), []byte("#!/bin/sh\necho full: \"$@\"\n"), 0o755)
	corral := filepath.Join(bin, "..", "corral")
	run := func(args ...string) result {
		cmd := exec.Command(filepath.Join(bin, "git-corral"), args...)
		cmd.Env = append(os.Environ(), "CORRAL_HOME="+corral, "NO_COLOR=1")
		cmd.Dir = bin
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
	}
	os.WriteFile(filepath.Join(bin, "net.toml"), []byte("[network]\nallow = [\"127.0.0.1:9\"]\n"), 0o644)
	os.WriteFile(filepath.Join(bin, "none.toml"), []byte("[network]\nallow = []\n"), 0o644)
	r := run("-C", ".", "sandbox", "--manifest", "net.toml", "--", "sh", "-c", "echo in")
	if want := (result{"full: -C . sandbox --manifest net.toml -- sh -c echo in\n", "", 0}); r != want {
		t.Errorf("a network grant through the front: %+v, want the full binary's %+v", r, want)
	}
	if _, err := os.Stat(filepath.Join(corral, "logs", "sandbox.jsonl")); err == nil {
		t.Error("the front logged a sandboxed run before it handed the network grant to the full binary")
	}
	if r := run("sandbox", "--manifest", "none.toml", "--", "sh", "-c", "echo in; exit 3"); r.stdout != "in\n" || r.code != 3 {
		t.Errorf("control: an empty network.allow through the front: %+v, want \"in\" and status 3 from the sandbox", r)
	}
}
