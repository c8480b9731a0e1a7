// Package e2e drives the real git-corral binary against real Lima boxes on this machine. It runs
// only with CORRAL_E2E=1 (make e2e). As root it runs the product as the unprivileged user
// $CORRAL_E2E_USER (default corral-ci) through runuser, because limactl refuses root.
package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// suite is the state shared by every scenario group.
var suite struct {
	bin    string // the git-corral binary under test
	user   string // who runs it
	uid    int
	gid    int
	home   string // CORRAL_HOME for every scenario
	asRoot bool
}

// e2eBase holds the suite's CORRAL_HOME; fixed so that a later run can sweep what a killed run
// left behind. CORRAL_E2E_BASE (an absolute path) gives a run its own base, so that two runs on
// one machine do not sweep each other's boxes.
var e2eBase = cmp.Or(os.Getenv("CORRAL_E2E_BASE"), "/var/tmp/corral-e2e")

func TestMain(m *testing.M) {
	if os.Getenv("CORRAL_E2E") != "1" {
		fmt.Println("e2e: skipped: set CORRAL_E2E=1 (make e2e) to boot real boxes; needs Lima, QEMU, the base image and, as root, the user corral-ci (scripts/setup.sh)")
		os.Exit(0)
	}
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: setup:", err)
		os.Exit(1)
	}
	sweep()
	if err := resetState(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: reset state:", err)
		os.Exit(1)
	}
	code := m.Run()
	sweep()
	// The golden bases the groups left (no box uses them now): pruned once every group is
	// done, as a group's own prune could take a base from under a box another group is making.
	if out, err := asUser([]string{suite.bin, "golden", "prune"}).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: golden prune: %v: %s\n", err, out)
	}
	os.Exit(code)
}

// setup builds the binary where the test user can run it and prepares CORRAL_HOME.
func setup() error {
	suite.asRoot = os.Geteuid() == 0
	suite.user = os.Getenv("CORRAL_E2E_USER")
	if suite.user == "" {
		suite.user = "corral-ci"
	}
	if !suite.asRoot {
		u, _ := user.Current()
		suite.user = u.Username
	}
	u, err := user.Lookup(suite.user)
	if err != nil {
		return fmt.Errorf("user %q: %w (scripts/setup.sh creates it)", suite.user, err)
	}
	suite.uid, _ = strconv.Atoi(u.Uid)
	suite.gid, _ = strconv.Atoi(u.Gid)
	suite.home = filepath.Join(e2eBase, "home")
	bindir := filepath.Join(e2eBase, "bin")
	for _, d := range []string{e2eBase, bindir, suite.home, filepath.Join(e2eBase, "projects")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := chown(suite.home); err != nil {
		return err
	}
	// As make install lays them out: the front as git-corral, the full binary and the inside
	// helper beside it (the Makefile's build, so the suite runs what users run).
	suite.bin = filepath.Join(bindir, "git-corral")
	build := exec.Command("make", "-s", "build", "BINDIR="+bindir)
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build git-corral (make build): %w", err)
	}
	for _, name := range []string{"git-corral", "git-corral-full", "git-corral-sandbox"} {
		if err := os.Chmod(filepath.Join(bindir, name), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// resetState starts every run from an empty CORRAL_HOME and no projects (after the sweep has
// deleted the boxes an earlier run left): approvals, clone stores, snapshots and logs of an
// earlier run on the same machine must not decide this one.
func resetState() error {
	for _, d := range []string{suite.home, filepath.Join(e2eBase, "projects")} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := chown(suite.home); err != nil {
		return err
	}
	// New boxes default to broker mode (issue #34); the groups written for full boxes keep them
	// through the suite's global file, and every other group names its mode in its own file.
	global := filepath.Join(suite.home, "config.toml")
	if err := os.WriteFile(global, []byte(suiteGlobalConfig), 0o644); err != nil {
		return err
	}
	return chown(global)
}

// suiteGlobalConfig is the suite's $CORRAL_HOME/config.toml.
const suiteGlobalConfig = "network = \"full\"\n"

func chown(p string) error {
	if !suite.asRoot {
		return nil
	}
	return os.Chown(p, suite.uid, suite.gid)
}

// asUser returns a command that runs argv as the test user with exactly the given environment
// (runuser keeps the caller's environment; values never go on a command line).
func asUser(argv []string, env ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if suite.asRoot {
		cmd = exec.Command("runuser", append([]string{"-u", suite.user, "--"}, argv...)...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Env = append([]string{"HOME=" + suite.home, "CORRAL_HOME=" + suite.home,
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG=C.UTF-8", "GIT_CONFIG_NOSYSTEM=1"}, env...)
	return cmd
}

// result is one finished command.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// corral runs git corral in dir as the test user.
func corral(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := asUser(append([]string{suite.bin, "-C", dir}, args...), env...)
	return runCmd(t, cmd, strings.Join(args, " "))
}

func runCmd(t *testing.T, cmd *exec.Cmd, label string) result {
	t.Helper()
	if cmd.Env != nil { // asUser's: the group's own variables too (no name is in both)
		cmd.Env = append(append([]string(nil), groupEnv(t)...), cmd.Env...)
	}
	defer suiteGate.enter(t)()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// SIGTERM first: runuser passes it on, and git corral removes a half-made box (keeping
		// its console in the box log) before it exits; SIGKILL would end runuser alone.
		t.Logf("%s: still running after %v: SIGTERM", label, time.Since(t0).Round(time.Second))
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-done:
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			err = <-done
		}
	}
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(t0)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	t.Logf("git corral %s: exit %d in %.1fs\nstdout: %s\nstderr: %s", label, r.code, r.took.Seconds(), r.stdout, r.stderr)
	if r.code != 0 {
		logBoxLog(t, r.stderr)
	}
	return r
}

// boxLogRE finds the box log a failed creation or start names in its error.
var boxLogRE = regexp.MustCompile(`\(log: (/[^)\s]+\.log)\)`)

// logBoxLog logs the end of the box log an error names: what Lima said and, for a first boot
// that failed, the guest console git corral kept before it removed the box. CI keeps only the
// test output.
func logBoxLog(t *testing.T, stderr string) {
	t.Helper()
	m := boxLogRE.FindStringSubmatch(stderr)
	if m == nil {
		return
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		t.Logf("box log %s: %v", m[1], err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 150 {
		lines = lines[len(lines)-150:]
	}
	t.Logf("the end of %s:\n%s", m[1], strings.Join(lines, "\n"))
}

// newProject makes a git repository owned by the test user and returns its path.
func newProject(t *testing.T, name string) string {
	t.Helper()
	dir := cloneCase(t, name)
	r := runCmd(t, asUser([]string{"sh", "-c", "cd " + dir + " && git init -q . && echo hello > README"}), "git init")
	if r.code != 0 {
		t.Fatalf("git init failed: %s", r.stderr)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// limactl runs the pinned limactl as the test user against the suite's LIMA_HOME.
func limactl(args ...string) (string, error) {
	lc := "/usr/local/lib/git-corral/lima/bin/limactl"
	if p := os.Getenv("CORRAL_LIMACTL"); p != "" {
		lc = p
	}
	cmd := asUser(append([]string{lc, "--tty=false"}, args...), "LIMA_HOME="+filepath.Join(suite.home, "lima"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sweep stops and deletes every box under the suite's LIMA_HOME: leftovers of a killed run.
func sweep() {
	lc := "/usr/local/lib/git-corral/lima/bin/limactl"
	if p := os.Getenv("CORRAL_LIMACTL"); p != "" {
		lc = p
	}
	b, err := asUser([]string{lc, "--tty=false", "list", "--format", "{{.Name}}"}, "LIMA_HOME="+filepath.Join(suite.home, "lima")).Output()
	if err != nil {
		return
	}
	out := string(b)
	for _, n := range strings.Fields(out) {
		fmt.Fprintf(os.Stderr, "e2e: sweeping box %s\n", n)
		_, _ = limactl("stop", "--force", n)
		_, _ = limactl("delete", "--force", n)
	}
	stopBrokers("")
}

// cleanupBox stops and deletes box at the end of the test, whatever happened: through git corral
// first (which also ends the box's broker), then limactl for whatever is left.
func cleanupBox(t *testing.T, box string) {
	t.Cleanup(func() {
		_ = asUser([]string{suite.bin, "--box", box, "delete", "--yes"}).Run()
		_, _ = limactl("stop", "--force", box)
		if out, err := limactl("delete", "--force", box); err != nil && !strings.Contains(out, "not exist") {
			t.Logf("delete %s: %v: %s", box, err, out)
		}
		stopBrokers(box)
	})
}

// stopBrokers ends broker children and connection holders this suite's binary started (argv[0]
// is suite.bin) for box, or for every box when box is "", by PID: a box deleted behind git
// corral's back leaves its broker running (a holder ends with its box's connection; this only
// hurries it). Groups run side by side: one group's cleanup must not end another's broker.
func stopBrokers(box string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 3 && args[0] == suite.bin && (strings.Contains(string(b), "\x00broker\x00serve\x00") || strings.Contains(string(b), "\x00connection\x00serve\x00")) &&
			(box == "" || strings.Contains(string(b), "\x00--box\x00"+box+"\x00")) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	}
}

// listEntry is one line of git corral list --json.
type listEntry struct {
	Box    string `json:"box"`
	Status string `json:"status"`
	Drift  bool   `json:"drift"`
}

func list(t *testing.T, dir string) []listEntry {
	t.Helper()
	r := corral(t, dir, nil, "list", "--json")
	if r.code != 0 {
		t.Fatalf("list --json: exit %d: %s", r.code, r.stderr)
	}
	var l []listEntry
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatalf("list --json: %v: %s", err, r.stdout)
	}
	return l
}

// listBox is list's entries for box: other groups' boxes run beside it (parallel_test.go).
func listBox(t *testing.T, dir, box string) []listEntry {
	t.Helper()
	var l []listEntry
	for _, e := range list(t, dir) {
		if e.Box == box {
			l = append(l, e)
		}
	}
	return l
}

func boxName(t *testing.T, dir string) string {
	t.Helper()
	r := corral(t, dir, nil, "info", "--json")
	var info struct {
		Box string `json:"box"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.Box == "" {
		t.Fatalf("info --json: %v: %s", err, r.stdout)
	}
	return info.Box
}
