package session

// Tests of the session flow against a real sshd on loopback (internal/sshtest) standing in for
// the box's: what only the VM suite proved before is proven here in seconds. The guest guard
// daemon is a stand-in listening on a unix socket the test user reaches, answering as the
// guest's guardd does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/sshtest"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// userDir is a temp directory the test sshd's user can reach (t.TempDir's parent is closed to it).
func userDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// guardDaemon answers each connection with report after delay and records when it answered.
type guardDaemon struct {
	path     string
	mu       sync.Mutex
	answered []time.Time
}

func startGuardDaemon(t *testing.T, report string, delay time.Duration) *guardDaemon {
	t.Helper()
	d := &guardDaemon{path: filepath.Join(userDir(t, "guardd"), "guard.sock")}
	ln, err := net.Listen("unix", d.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	os.Chmod(d.path, 0o666)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			time.Sleep(delay)
			d.mu.Lock()
			d.answered = append(d.answered, time.Now())
			d.mu.Unlock()
			c.Write([]byte(report))
			c.Close()
		}
	}()
	return d
}

const (
	reportPass = `{"ok":true,"mode":"offline","failures":[]}` + "\n"
	reportFail = `{"ok":false,"mode":"offline","failures":["nftables lockdown is not loaded"]}` + "\n"
)

// testBox is a Box whose "guest" is the test sshd, with a Lima-like ssh.config, an offline
// configuration (so every session is guarded), no connection holder, and its audit log under a
// temporary CORRAL_HOME.
func testBox(t *testing.T, srv *sshtest.Server, guard *guardDaemon, getenv map[string]string) *Box {
	t.Helper()
	lima := t.TempDir()
	inst := filepath.Join(lima, "b-flow")
	os.MkdirAll(filepath.Join(lima, "_config"), 0o700)
	os.MkdirAll(inst, 0o700)
	key, err := os.ReadFile(srv.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(lima, "_config", "user"), key, 0o600)
	conf := fmt.Sprintf("Host lima-b-flow\n  IdentityFile %s\n  User %s\n  Hostname %s\n  Port %d\n",
		filepath.Join(lima, "_config", "user"), srv.User, srv.Host, srv.Port)
	if err := os.WriteFile(filepath.Join(inst, "ssh.config"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CORRAL_NO_CONNECTION_HOLDER": "1"}
	for k, v := range getenv {
		env[k] = v
	}
	cfg := policy.Default()
	cfg.GitIdentity = "none" // the fake sshd accepts CORRAL_* only; identity_test.go covers it
	cfg.Network = policy.NetworkOffline
	return &Box{
		Manager: &vm.Manager{Home: home.Home{Dir: t.TempDir()}}, Name: "b-flow", Dir: userDir(t, "project"),
		Config: cfg, Status: vm.Status{Status: "Running", SSHConfig: filepath.Join(inst, "ssh.config")},
		req:         Request{Cmd: "run", Getenv: func(k string) string { return env[k] }},
		guardSocket: guard.path,
	}
}

// records reads the box's audit log.
func records(t *testing.T, b *Box) []audit.Record {
	t.Helper()
	res, err := audit.Read(b.Manager.Home.SessionsLog(), audit.Filter{})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return res.Records
}

func events(rs []audit.Record) string {
	var ev []string
	for _, r := range rs {
		ev = append(ev, string(r.Event))
	}
	return strings.Join(ev, ",")
}

// TestRunNothingBeforeGuardPasses: the command, its stdin and anything from the host reach the
// guest only after the guard daemon's report passed, whether the session is gated (opened
// beside the check) or not; a failing report runs nothing, reads no stdin and is audited as a
// guard failure with no launch record. The controls run the same command with a passing report.
func TestRunNothingBeforeGuardPasses(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	for _, tc := range []struct {
		name   string
		report string
		env    map[string]string // CORRAL_TEST_VALUE forwarded: the separate, ungated path
		ran    bool
	}{
		{"gated, failing report", reportFail, nil, false},
		{"gated, passing report", reportPass, nil, true},
		{"host values, failing report", reportFail, map[string]string{"fwd": "1"}, false},
		{"host values, passing report", reportPass, map[string]string{"fwd": "1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			guard := startGuardDaemon(t, tc.report, 700*time.Millisecond)
			b := testBox(t, srv, guard, nil)
			if tc.env != nil {
				t.Setenv("CORRAL_TEST_VALUE", "from the host")
				b.Config.ForwardEnv = []string{"CORRAL_TEST_VALUE"}
			}
			marker := filepath.Join(userDir(t, "marker"), "ran")
			stdin, w, _ := os.Pipe()
			w.WriteString("secret input\n")
			w.Close()
			var out, errb strings.Builder
			cmd := []string{"sh", "-c", `date +%s.%N > "$1"; cat >> "$1"; printf '%s\n' "${CORRAL_TEST_VALUE-}" >> "$1"`, "sh", marker}
			err := b.Run(context.Background(), cmd, Streams{Stdin: stdin, Stdout: &out, Stderr: &errb}, 0)
			rest := make([]byte, 64)
			n, _ := stdin.Read(rest)
			got, readErr := os.ReadFile(marker)
			rs := records(t, b)
			if !tc.ran {
				if !errors.Is(err, vm.ErrGuard) {
					t.Fatalf("Run = %v, want the guard's refusal", err)
				}
				if readErr == nil {
					t.Errorf("the command ran after a failing report: %q", got)
				}
				if string(rest[:n]) != "secret input\n" {
					t.Errorf("stdin was read (%q left): not one byte may reach the guest before the check", rest[:n])
				}
				if events(rs) != "guard-failure" || !strings.Contains(rs[0].Detail, "nftables lockdown") {
					t.Errorf("audit %q: want one guard-failure record naming the guard", events(rs))
				}
				return
			}
			if err != nil || readErr != nil {
				t.Fatalf("Run = %v, marker %v; stderr %s", err, readErr, errb.String())
			}
			lines := strings.Split(string(got), "\n")
			if len(lines) < 3 || lines[1] != "secret input" {
				t.Fatalf("marker %q: want the time, the stdin and the forwarded value", got)
			}
			if tc.env != nil && lines[2] != "from the host" {
				t.Errorf("forwarded value %q, want it in the session after the check", lines[2])
			}
			var sec, nsec int64
			fmt.Sscanf(lines[0], "%d.%d", &sec, &nsec)
			ranAt := time.Unix(sec, nsec)
			guard.mu.Lock()
			answered := guard.answered
			guard.mu.Unlock()
			if len(answered) == 0 || !ranAt.After(answered[0]) {
				t.Errorf("the command ran at %s, the guard answered at %v: the command must run after the report", ranAt, answered)
			}
			if events(rs) != "launch,exit" {
				t.Fatalf("audit %q: want launch then exit", events(rs))
			}
			if !rs[0].Time.Before(ranAt) {
				t.Errorf("launch record at %s, command ran at %s: the launch is audited before the command runs", rs[0].Time, ranAt)
			}
			if tc.env != nil && (strings.Join(rs[0].EnvNames, ",") != "CORRAL_TEST_VALUE" || strings.Contains(fmt.Sprint(rs), "from the host")) {
				t.Errorf("launch record %+v: want the forwarded name, never its value", rs[0])
			}
		})
	}
}

// TestOpenCloneAuditsStart: clone and fetch go through the same preflight as start: a start
// record naming the command is written before any box is looked for (here no limactl exists,
// so the flow stops right after), and a log that cannot be written refuses before that.
func TestOpenCloneAuditsStart(t *testing.T) {
	root := t.TempDir()
	env := map[string]string{"CORRAL_HOME": filepath.Join(root, "corral"), "HOME": root, "PATH": "/nonexistent"}
	getenv := func(k string) string { return env[k] }
	t.Setenv("PATH", "/nonexistent") // no limactl anywhere
	for _, cmd := range []string{"fetch", "clone"} {
		req := CloneRequest{Request: Request{Cmd: cmd, Getenv: getenv}, Box: "c-123456", HostDir: root, Create: cmd == "clone"}
		_, err := OpenClone(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "limactl") {
			t.Fatalf("%s: OpenClone = %v, want it to stop at finding limactl", cmd, err)
		}
	}
	res, err := audit.Read(filepath.Join(root, "corral", "logs", "sessions.jsonl"), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if events(res.Records) != "start,start" || res.Records[0].Detail != "git corral fetch" || res.Records[1].Detail != "git corral clone" {
		t.Fatalf("audit %+v: want a start record for fetch and for clone", res.Records)
	}
	// clone loaded its configuration: its start names the stored policy, which checks; fetch
	// (the control) loaded none and names none.
	h := home.Home{Dir: filepath.Join(root, "corral")}
	digest := res.Records[1].PolicyDigest
	raw, err := os.ReadFile(h.PolicySnapshot(digest))
	if err != nil || res.Records[0].PolicyDigest != "" {
		t.Fatalf("clone's start names policy %q (%v); fetch's names %q, want none", digest, err, res.Records[0].PolicyDigest)
	}
	if snap, err := policy.CheckSnapshot(raw, digest); err != nil || len(snap.Settings) == 0 {
		t.Fatalf("stored policy %s: %v, %d settings", digest, err, len(snap.Settings))
	}
	// A logs directory that cannot be written refuses before anything else.
	logs := filepath.Join(root, "corral", "logs")
	os.RemoveAll(logs)
	os.WriteFile(logs, []byte("in the way"), 0o600)
	_, err = OpenClone(context.Background(), CloneRequest{Request: Request{Cmd: "fetch", Getenv: getenv}, Box: "c-123456", HostDir: root})
	if err == nil || !strings.Contains(err.Error(), "refusing to start unaudited") {
		t.Fatalf("OpenClone with an unwritable log = %v, want a refusal", err)
	}
}

// TestGuestRefusedIsAudited: a clone-mode box whose guard check fails (an offline box with no
// guard check installed) is refused before anything is delivered or read, and the refusal is
// in the audit log; the control, a full-mode box with no guest scripts, passes (with a notice).
func TestGuestRefusedIsAudited(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	guard := startGuardDaemon(t, reportPass, 0)
	b := testBox(t, srv, guard, nil)
	if _, err := b.Guest(context.Background(), "/srv/x"); !errors.Is(err, vm.ErrGuard) {
		t.Fatalf("Guest of an offline box without guards = %v, want a guard refusal", err)
	}
	if rs := records(t, b); events(rs) != "guard-failure" {
		t.Fatalf("audit %q: want one guard-failure record", events(rs))
	}
	var notices []string
	b.Config.Network = policy.NetworkFull
	b.req.UI.Notice = func(s string) { notices = append(notices, s) }
	g, err := b.Guest(context.Background(), "/srv/x")
	if err != nil {
		t.Fatalf("Guest of a full box without guest scripts: %v", err)
	}
	defer g.Close()
	if !strings.HasSuffix(g.Dir, "/src/x") || len(notices) != 1 {
		t.Errorf("guest dir %q, notices %q: want the checkout under the user's home and one notice", g.Dir, notices)
	}
}

// TestStartRecordsTheModeTheBoxKeeps: the start record names the network the session runs
// in: an old full box under the broker default keeps full, an offline box asked for broker
// keeps offline; the controls, a new box and a box asked for its own mode, take the
// configuration's.
func TestStartRecordsTheModeTheBoxKeeps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		meta      policy.Network
		cfg       policy.Network
		defaulted bool
		want      policy.Network
	}{
		{"old full box, broker by default", policy.NetworkFull, policy.NetworkBroker, true, policy.NetworkFull},
		{"offline box, broker asked", policy.NetworkOffline, policy.NetworkBroker, false, policy.NetworkOffline},
		{"full box, broker named (refused later)", policy.NetworkFull, policy.NetworkBroker, false, policy.NetworkBroker},
		{"control: a new box", "", policy.NetworkBroker, true, policy.NetworkBroker},
		{"control: the box's own mode", policy.NetworkBroker, policy.NetworkBroker, false, policy.NetworkBroker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := home.Home{Dir: t.TempDir()}
			if tc.meta != "" {
				if err := (&vm.Manager{Home: h}).WriteMeta(vm.Meta{Box: "b-123456", Network: string(tc.meta)}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := policy.Default()
			cfg.Network, cfg.NetworkDefaulted = tc.cfg, tc.defaulted
			if err := preflight(context.Background(), Request{Cmd: "run", Getenv: func(string) string { return "" }}, h, "b-123456", t.TempDir(), cfg); err != nil {
				t.Fatal(err)
			}
			res, err := audit.Read(h.SessionsLog(), audit.Filter{})
			if err != nil || len(res.Records) != 1 {
				t.Fatalf("records %+v, %v", res.Records, err)
			}
			if got := policy.Network(res.Records[0].Network); got != tc.want {
				t.Errorf("start record network %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRunRefusesReportOfAnotherMode: a guard report that passes for another network mode than
// the box's (here the guest's guards are "full"'s, the host runs an offline box) refuses the
// session and runs nothing, whether the report came through the guard daemon or through the
// separate check. The control is the same report for the box's own mode.
func TestRunRefusesReportOfAnotherMode(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	full := `{"ok":true,"mode":"full","failures":[]}` + "\n"
	for _, tc := range []struct {
		name, report string
		ran          bool
	}{
		{"another mode's report", full, false},
		{"control: the box's own mode", reportPass, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBox(t, srv, startGuardDaemon(t, tc.report, 0), nil)
			marker := filepath.Join(userDir(t, "marker"), "ran")
			var errb strings.Builder
			err := b.Run(context.Background(), []string{"touch", marker}, Streams{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb}, 0)
			_, statErr := os.Stat(marker)
			if !tc.ran {
				if !errors.Is(err, vm.ErrGuard) || !strings.Contains(err.Error(), `network "full"`) || !strings.Contains(err.Error(), `network "offline"`) {
					t.Fatalf("Run = %v, want the guard's refusal naming both modes", err)
				}
				if statErr == nil {
					t.Error("the command ran after a report of another mode")
				}
				return
			}
			if err != nil || statErr != nil {
				t.Fatalf("Run = %v, marker %v; stderr %s", err, statErr, errb.String())
			}
		})
	}
	t.Run("separate check", func(t *testing.T) {
		out := vm.CheckReportMode(provision.GuardReport{OK: true, Mode: "broker"}, policy.NetworkOffline)
		if !errors.Is(out, vm.ErrGuard) {
			t.Errorf("CheckReportMode(broker report, offline box) = %v, want ErrGuard", out)
		}
		if err := vm.CheckReportMode(provision.GuardReport{OK: true, Mode: "offline"}, policy.NetworkOffline); err != nil {
			t.Errorf("control: CheckReportMode(offline, offline) = %v", err)
		}
	})
}
